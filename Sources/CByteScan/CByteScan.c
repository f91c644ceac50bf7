#include "CByteScan.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string.h>

// A field value's bytes: field-vchar, obs-text, SP and HTAB; a control byte other than HTAB,
// or DEL, ends it. Signed compares: bytes 0x80–0xFF are negative, so "a control" is tested
// as (x > -1 and x < 0x20).
size_t sidecar_field_value_length(const unsigned char *p, size_t n) {
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(0x20), minus_one = _mm_set1_epi8(-1);
    const __m128i tab = _mm_set1_epi8(0x09), del = _mm_set1_epi8(0x7F);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i control = _mm_and_si128(_mm_cmpgt_epi8(v, minus_one), _mm_cmplt_epi8(v, space));
        __m128i bad = _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(v, tab), control), _mm_cmpeq_epi8(v, del));
        int mask = _mm_movemask_epi8(bad);
        if (mask != 0) return i + (size_t)__builtin_ctz((unsigned)mask);
    }
    if (i < n && n >= 16) {
        // The last 16 bytes, overlapping bytes already found good: no byte-by-byte tail.
        size_t at = n - 16;
        __m128i v = _mm_loadu_si128((const __m128i *)(p + at));
        __m128i control = _mm_and_si128(_mm_cmpgt_epi8(v, minus_one), _mm_cmplt_epi8(v, space));
        __m128i bad = _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(v, tab), control), _mm_cmpeq_epi8(v, del));
        int mask = _mm_movemask_epi8(bad);
        return mask != 0 ? at + (size_t)__builtin_ctz((unsigned)mask) : n;
    }
#endif
    for (; i < n; i++) {
        unsigned char c = p[i];
        if ((c < 0x20 && c != 0x09) || c == 0x7F) break;
    }
    return i;
}

static int is_token_char(unsigned char c) {
    static const char extra[] = "!#$%&'*+-.^_`|~";
    if ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) return 1;
    return c != 0 && memchr(extra, c, sizeof extra - 1) != NULL;
}

static size_t token_prefix_scalar(const unsigned char *p, size_t n, size_t i) {
    while (i < n && is_token_char(p[i])) i++;
    return i;
}

static size_t lowercase_token_scalar(const unsigned char *p, size_t n) {
    size_t i = 0;
    while (i < n && is_token_char(p[i]) && !(p[i] >= 'A' && p[i] <= 'Z')) i++;
    return i;
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <stdatomic.h>
#include <tmmintrin.h>

// Each character is checked and translated by its two nibbles, with three 16-entry table
// lookups (pshufb) in place of a compare pair per range. Its high nibble names a class (a
// bit of `hi_class`); `lo_invalid` holds, per low nibble, the classes in which that nibble
// is not a base64url character; a byte is valid when the two share no bit. The high nibble
// also gives the offset to the 6-bit value, except for '_' (high nibble 5, like 'P'..'Z'),
// corrected by its own compare. Four 6-bit values sit in each 32-bit lane; two multiply-adds
// join them into the lane's 24 bits (a·64 + b per 16-bit half, then ab·4096 + cd), and a
// shuffle takes the three bytes of each lane in order.
//
//   high nibble  characters          class   offset
//   2            '-' (0x2D)          0x01    +17 (62 - '-')
//   3            '0'..'9'            0x02    +4 (52 - '0')
//   4, 6         'A'..'O', 'a'..'o'  0x04    -65 ('A'), -71 (26 - 'a')
//   5            'P'..'Z', '_'       0x08    -65; '_' -32 (63 - '_')
//   7            'p'..'z'            0x10    -71
//   0, 1, 8..F   none                0x20
__attribute__((target("ssse3")))
static size_t decode_blocks_ssse3(const unsigned char *in, size_t n, unsigned char *out, size_t out_len) {
    const __m128i hi_class = _mm_setr_epi8(0x20, 0x20, 0x01, 0x02, 0x04, 0x08, 0x04, 0x10,
                                           0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20);
    // The classes in which low nibble L is no character: 0x01 unless L is 13 ('-'), 0x02 from
    // 10 on, 0x04 at 0 ('@', '`'), 0x08 from 11 to 14 (15 is '_'), 0x10 from 11 on, 0x20 always.
    const __m128i lo_invalid = _mm_setr_epi8(
        0x20 | 0x01 | 0x04, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21,
        0x20 | 0x01 | 0x02, 0x20 | 0x01 | 0x02 | 0x08 | 0x10, 0x20 | 0x01 | 0x02 | 0x08 | 0x10,
        0x20 | 0x02 | 0x08 | 0x10, 0x20 | 0x01 | 0x02 | 0x08 | 0x10, 0x20 | 0x01 | 0x02 | 0x10);
    const __m128i hi_offset = _mm_setr_epi8(0, 0, 17, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128i nibble = _mm_set1_epi8(0x0F), underscore = _mm_set1_epi8('_');
    const __m128i underscore_fix = _mm_set1_epi8(33);  // -32 in place of -65
    const __m128i join_pairs = _mm_set1_epi32(0x01400140);  // bytes 64, 1, 64, 1
    const __m128i join_halves = _mm_set1_epi32(0x00011000);  // halves 4096, 1
    const __m128i take_bytes = _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    size_t i = 0, o = 0;
    while (i + 16 <= n && o + 16 <= out_len) {
        __m128i v = _mm_loadu_si128((const __m128i *)(in + i));
        __m128i hi = _mm_and_si128(_mm_srli_epi32(v, 4), nibble), lo = _mm_and_si128(v, nibble);
        __m128i invalid = _mm_and_si128(_mm_shuffle_epi8(lo_invalid, lo), _mm_shuffle_epi8(hi_class, hi));
        if (_mm_movemask_epi8(_mm_cmpeq_epi8(invalid, _mm_setzero_si128())) != 0xFFFF) break;
        __m128i offset = _mm_add_epi8(_mm_shuffle_epi8(hi_offset, hi),
                                      _mm_and_si128(_mm_cmpeq_epi8(v, underscore), underscore_fix));
        __m128i values = _mm_add_epi8(v, offset);
        __m128i pairs = _mm_maddubs_epi16(values, join_pairs);
        __m128i lanes = _mm_madd_epi16(pairs, join_halves);
        _mm_storeu_si128((__m128i *)(out + o), _mm_shuffle_epi8(lanes, take_bytes));
        i += 16;
        o += 12;
    }
    return i;
}

static int cpu_has_ssse3(void) {
    // cpuid is costly (a VM exit under a hypervisor): asked once; racing threads ask twice.
    static _Atomic int known = -1;
    int answer = atomic_load_explicit(&known, memory_order_relaxed);
    if (answer < 0) {
        unsigned a, b, c, d;
        answer = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSSE3) != 0;
        atomic_store_explicit(&known, answer, memory_order_relaxed);
    }
    return answer;
}

// tchar (RFC 9110 §5.6.2) by nibbles: `token_rows[L]` has bit H set when the byte 0xHL is a
// tchar (H < 8); `row_bit[H]` is 1 << H, and 0 for H >= 8 (no byte from 0x80 is one).
__attribute__((target("ssse3")))
static size_t token_prefix_ssse3(const unsigned char *p, size_t n) {
    const __m128i token_rows = _mm_setr_epi8(
        (char)0xE8, (char)0xFC, (char)0xF8, (char)0xFC, (char)0xFC, (char)0xFC, (char)0xFC, (char)0xFC,
        (char)0xF8, (char)0xF8, (char)0xF4, 0x54, (char)0xD0, 0x54, (char)0xF4, 0x70);
    const __m128i row_bit = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, (char)0x80, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128i nibble = _mm_set1_epi8(0x0F);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), nibble), lo = _mm_and_si128(v, nibble);
        __m128i hit = _mm_and_si128(_mm_shuffle_epi8(token_rows, lo), _mm_shuffle_epi8(row_bit, hi));
        int mask = _mm_movemask_epi8(_mm_cmpeq_epi8(hit, _mm_setzero_si128()));
        if (mask != 0) return i + (size_t)__builtin_ctz((unsigned)mask);
    }
    return token_prefix_scalar(p, n, i);
}

// As `token_rows` without 'A'..'Z' (bit 4 of rows 1-15, bit 5 of rows 0-10).
__attribute__((target("ssse3")))
static size_t lowercase_token_length_ssse3(const unsigned char *p, size_t n) {
    const __m128i rows = _mm_setr_epi8(
        (char)0xC8, (char)0xCC, (char)0xC8, (char)0xCC, (char)0xCC, (char)0xCC, (char)0xCC, (char)0xCC,
        (char)0xC8, (char)0xC8, (char)0xC4, 0x44, (char)0xC0, 0x44, (char)0xE4, 0x60);
    const __m128i row_bit = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, (char)0x80, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128i nibble = _mm_set1_epi8(0x0F);
    size_t i = 0;
    while (i < n) {
        __m128i v;
        unsigned valid = 0xFFFF;
        if (i + 16 <= n) {
            v = _mm_loadu_si128((const __m128i *)(p + i));
        } else {
            // A short name (most are) or the tail, in a padded copy: no read past the end.
            unsigned char padded[16] = {0};
            memcpy(padded, p + i, n - i);
            v = _mm_loadu_si128((const __m128i *)padded);
            valid = (1u << (n - i)) - 1;
        }
        __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), nibble), lo = _mm_and_si128(v, nibble);
        __m128i hit = _mm_and_si128(_mm_shuffle_epi8(rows, lo), _mm_shuffle_epi8(row_bit, hi));
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(hit, _mm_setzero_si128())) & valid;
        if (mask != 0) return i + (size_t)__builtin_ctz(mask);
        i += 16;
    }
    return n;
}

size_t sidecar_token_prefix(const unsigned char *p, size_t n) {
    return cpu_has_ssse3() ? token_prefix_ssse3(p, n) : token_prefix_scalar(p, n, 0);
}

size_t sidecar_lowercase_token_length(const unsigned char *p, size_t n) {
    return cpu_has_ssse3() ? lowercase_token_length_ssse3(p, n) : lowercase_token_scalar(p, n);
}

size_t sidecar_base64url_decode_blocks(const unsigned char *in, size_t n, unsigned char *out, size_t out_len) {
    return cpu_has_ssse3() ? decode_blocks_ssse3(in, n, out, out_len) : 0;
}
#else
size_t sidecar_token_prefix(const unsigned char *p, size_t n) { return token_prefix_scalar(p, n, 0); }

size_t sidecar_lowercase_token_length(const unsigned char *p, size_t n) { return lowercase_token_scalar(p, n); }

size_t sidecar_base64url_decode_blocks(const unsigned char *in, size_t n, unsigned char *out, size_t out_len) {
    (void)in; (void)n; (void)out; (void)out_len;
    return 0;
}
#endif
