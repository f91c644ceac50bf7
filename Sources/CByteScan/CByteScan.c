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
