// Byte-class scans for the HTTP head parser, 16 bytes per step with SSE2 (a portable loop
// elsewhere). Swift's generic SIMD types do not lower these to single vector compares.
#ifndef CBYTESCAN_H
#define CBYTESCAN_H

#include <stddef.h>

/// Length of the longest prefix of `p[0..<n]` whose bytes are all field-vchar or obs-text
/// (RFC 9110: 0x21–0x7E and 0x80–0xFF; i.e. neither a control, SP nor DEL).
size_t sidecar_visible_prefix(const unsigned char *p, size_t n);

#endif
