#include "CByteScan.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

size_t sidecar_visible_prefix(const unsigned char *p, size_t n) {
    size_t i = 0;
#if defined(__SSE2__)
    // Signed compares: bytes 0x80–0xFF are negative, so "below 0x21" is tested as
    // (x > -1 and x < 0x21); DEL by equality.
    const __m128i bang = _mm_set1_epi8(0x21);
    const __m128i minus_one = _mm_set1_epi8(-1);
    const __m128i del = _mm_set1_epi8(0x7F);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i low = _mm_and_si128(_mm_cmpgt_epi8(v, minus_one), _mm_cmplt_epi8(v, bang));
        __m128i bad = _mm_or_si128(low, _mm_cmpeq_epi8(v, del));
        int mask = _mm_movemask_epi8(bad);
        if (mask != 0) return i + (size_t)__builtin_ctz((unsigned)mask);
    }
#endif
    for (; i < n; i++) {
        unsigned char c = p[i];
        if (c < 0x21 || c == 0x7F) break;
    }
    return i;
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <stdatomic.h>
#include <tmmintrin.h>

// Each character is classified by range compares (signed: bytes >= 0x80 fall in no range)
// and moved to its 6-bit value by the offset of its range. Four 6-bit values sit in each
// 32-bit lane; two multiply-adds join them into the lane's 24 bits (a·64 + b per 16-bit
// half, then ab·4096 + cd), and a shuffle takes the three bytes of each lane in order.
__attribute__((target("ssse3")))
static size_t decode_blocks_ssse3(const unsigned char *in, size_t n, unsigned char *out, size_t out_len) {
    const __m128i before_upper = _mm_set1_epi8('A' - 1), after_upper = _mm_set1_epi8('Z' + 1);
    const __m128i before_lower = _mm_set1_epi8('a' - 1), after_lower = _mm_set1_epi8('z' + 1);
    const __m128i before_digit = _mm_set1_epi8('0' - 1), after_digit = _mm_set1_epi8('9' + 1);
    const __m128i dash = _mm_set1_epi8('-'), underscore = _mm_set1_epi8('_');
    const __m128i upper_offset = _mm_set1_epi8(-'A'), lower_offset = _mm_set1_epi8(26 - 'a');
    const __m128i digit_offset = _mm_set1_epi8(52 - '0'), dash_offset = _mm_set1_epi8(62 - '-');
    const __m128i underscore_offset = _mm_set1_epi8(63 - '_');
    const __m128i join_pairs = _mm_set1_epi32(0x01400140);  // bytes 64, 1, 64, 1
    const __m128i join_halves = _mm_set1_epi32(0x00011000);  // halves 4096, 1
    const __m128i take_bytes = _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    size_t i = 0, o = 0;
    while (i + 16 <= n && o + 16 <= out_len) {
        __m128i v = _mm_loadu_si128((const __m128i *)(in + i));
        __m128i upper = _mm_and_si128(_mm_cmpgt_epi8(v, before_upper), _mm_cmplt_epi8(v, after_upper));
        __m128i lower = _mm_and_si128(_mm_cmpgt_epi8(v, before_lower), _mm_cmplt_epi8(v, after_lower));
        __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, before_digit), _mm_cmplt_epi8(v, after_digit));
        __m128i is_dash = _mm_cmpeq_epi8(v, dash), is_underscore = _mm_cmpeq_epi8(v, underscore);
        __m128i valid = _mm_or_si128(_mm_or_si128(upper, lower), _mm_or_si128(digit, _mm_or_si128(is_dash, is_underscore)));
        if (_mm_movemask_epi8(valid) != 0xFFFF) break;
        __m128i offset = _mm_or_si128(
            _mm_or_si128(_mm_and_si128(upper, upper_offset), _mm_and_si128(lower, lower_offset)),
            _mm_or_si128(_mm_and_si128(digit, digit_offset),
                         _mm_or_si128(_mm_and_si128(is_dash, dash_offset), _mm_and_si128(is_underscore, underscore_offset))));
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

size_t sidecar_base64url_decode_blocks(const unsigned char *in, size_t n, unsigned char *out, size_t out_len) {
    return cpu_has_ssse3() ? decode_blocks_ssse3(in, n, out, out_len) : 0;
}
#else
size_t sidecar_base64url_decode_blocks(const unsigned char *in, size_t n, unsigned char *out, size_t out_len) {
    (void)in; (void)n; (void)out; (void)out_len;
    return 0;
}
#endif
