// Byte-class scans for the HTTP head parser and base64url blocks for the session opener,
// 16 bytes per step with SSE2/SSSE3 (a portable path elsewhere). Swift's generic SIMD types
// do not lower these to single vector compares and shuffles.
#ifndef CBYTESCAN_H
#define CBYTESCAN_H

#include <stddef.h>

/// Length of the longest prefix of `p[0..<n]` whose bytes may stand in a field value with its
/// whitespace (RFC 9110 §5.5: field-vchar 0x21–0x7E, obs-text 0x80–0xFF, SP, HTAB; i.e. no
/// control byte other than HTAB, and no DEL).
size_t sidecar_field_value_length(const unsigned char *p, size_t n);

/// Length of the longest prefix of `p[0..<n]` that is a token (RFC 9110 §5.6.2 tchar: ALPHA,
/// DIGIT and !#$%&'*+-.^_`|~), a field name's characters. SSSE3 when the CPU has it.
size_t sidecar_token_prefix(const unsigned char *p, size_t n);

/// Length of the longest prefix of `p[0..<n]` that is a token without uppercase letters: an
/// HTTP/2 field name's characters (RFC 9113 §8.2.1). SSSE3 when the CPU has it.
size_t sidecar_lowercase_token_length(const unsigned char *p, size_t n);

/// Decodes base64url (RFC 4648 §5) 16 characters → 12 bytes at a time, as long as a whole
/// block of input and 16 bytes of `out` are left and every character of the block is in the
/// alphabet; returns how many characters it decoded (a multiple of 16, possibly 0), leaving
/// the rest — the tail, and any block with a character outside the alphabet — to the caller's
/// strict scalar decoder. SSSE3 when the CPU has it (checked once), else it decodes nothing.
size_t sidecar_base64url_decode_blocks(const unsigned char *in, size_t n, unsigned char *out, size_t out_len);

#endif
