#ifndef SIDECAR_CNGHTTP2_SHIM_H
#define SIDECAR_CNGHTTP2_SHIM_H
#include <stdint.h>
#include <nghttp2/nghttp2.h>

// The frame fields the session callbacks read, as functions: `nghttp2_frame` is a C union,
// which Swift imports but reads through with more ceremony than these four accessors.
static inline uint8_t sidecar_h2_frame_type(const nghttp2_frame *f) { return f->hd.type; }
static inline uint8_t sidecar_h2_frame_flags(const nghttp2_frame *f) { return f->hd.flags; }
static inline int32_t sidecar_h2_frame_stream(const nghttp2_frame *f) { return f->hd.stream_id; }
static inline size_t sidecar_h2_frame_length(const nghttp2_frame *f) { return f->hd.length; }
static inline int sidecar_h2_headers_category(const nghttp2_frame *f) { return (int)f->headers.cat; }
static inline uint32_t sidecar_h2_rst_error(const nghttp2_frame *f) { return f->rst_stream.error_code; }
static inline size_t sidecar_h2_settings_count(const nghttp2_frame *f) { return f->settings.niv; }
static inline size_t sidecar_h2_frame_hd_length(const nghttp2_frame_hd *h) { return h->length; }
static inline uint8_t sidecar_h2_frame_hd_type(const nghttp2_frame_hd *h) { return h->type; }
static inline uint8_t sidecar_h2_frame_hd_flags(const nghttp2_frame_hd *h) { return h->flags; }
static inline int32_t sidecar_h2_frame_hd_stream(const nghttp2_frame_hd *h) { return h->stream_id; }
#endif
