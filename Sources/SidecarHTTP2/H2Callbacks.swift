import CNGHTTP2
import SidecarHTTP

/// libnghttp2's session callbacks, as C function pointers that find their `H2Session`
/// through the session's user data (unretained: the session owns the nghttp2 session).
enum H2Callbacks {
    static func install(_ callbacks: OpaquePointer?) {
        nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks, onBeginFrame)
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameReceived)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
    }

    /// Runs `body` with the session borrowed, not retained and released around each call:
    /// the session owns the nghttp2 session, so it is alive for every callback.
    @inline(__always)
    static func withOwner<R>(_ userData: UnsafeMutableRawPointer?, _ body: (H2Session) -> R) -> R {
        Unmanaged<H2Session>.fromOpaque(userData!)._withUnsafeGuaranteedRef(body)
    }

    static let headersType = UInt8(NGHTTP2_HEADERS.rawValue)
    static let continuationType = UInt8(NGHTTP2_CONTINUATION.rawValue)
    static let dataType = UInt8(NGHTTP2_DATA.rawValue)
    static let priorityType = UInt8(NGHTTP2_PRIORITY.rawValue)
    static let endStreamFlag = UInt8(NGHTTP2_FLAG_END_STREAM.rawValue)
    static let endHeadersFlag = UInt8(NGHTTP2_FLAG_END_HEADERS.rawValue)
    static let ackFlag = UInt8(NGHTTP2_FLAG_ACK.rawValue)
    static let requestCategory = Int32(NGHTTP2_HCAT_REQUEST.rawValue)
    /// A HEADERS frame on a stream whose request head came before: its trailers.
    static let trailerCategory = Int32(NGHTTP2_HCAT_HEADERS.rawValue)
    /// Returned by a callback that has ended the session itself (with GOAWAY already queued).
    static let callbackFailure = Int32(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
    static let resetStream = Int32(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)

    /// Counts the header block's bytes as they arrive, before any decoding: a block of
    /// CONTINUATION frames that never ends is refused at the same bound as the decoded list.
    static let onBeginFrame: nghttp2_on_begin_frame_callback = { _, header, userData in
        guard let header else { return 0 }
        return withOwner(userData) { session in
            let type = sidecar_h2_frame_hd_type(header)
            if type == headersType {
                session.headerBlockBytes = sidecar_h2_frame_hd_length(header)
                session.continuations = 0
            } else if type == continuationType {
                session.headerBlockBytes += sidecar_h2_frame_hd_length(header)
                session.continuations += 1
                // Browsers fit a head in one HEADERS frame or two; empty CONTINUATION frames
                // cost nothing to send and something to process each.
                if session.continuations > H2Session.maxContinuations {
                    session.refuse(.continuationFlood)
                    return callbackFailure
                }
            } else if type == priorityType {
                // Counted as it begins: without RFC 7540 priorities libnghttp2 skips the
                // frame's payload and reports nothing more of it.
                if !session.guardian.control.take(nowMs: session.now) {
                    session.refuse(.controlFlood)
                    return callbackFailure
                }
                return 0
            } else {
                return 0
            }
            // Compressed bytes can never exceed the decoded list by much; twice the bound is
            // generous to any honest client.
            if session.headerBlockBytes > 2 * session.limits.maxHeaderBytes {
                session.refuse(.headerBlockTooLarge)
                return callbackFailure
            }
            return 0
        }
    }

    static let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, userData in
        guard let frame, sidecar_h2_headers_category(frame) == requestCategory else { return 0 }
        return withOwner(userData) { session in
            var arrays = session.delegate?.h2SpareHead() ?? HeadArrays()
            session.head.reset(reusing: &arrays)
            session.headStream = sidecar_h2_frame_stream(frame)
            return 0
        }
    }

    static let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
        guard let frame, let name, let value else { return 0 }
        let stream = sidecar_h2_frame_stream(frame)
        return withOwner(userData) { session in
            guard stream == session.headStream else {
                if sidecar_h2_headers_category(frame) == trailerCategory, session.trailerRefused != stream {
                    let name = UnsafeRawBufferPointer(start: name, count: nameLength)
                    let value = UnsafeRawBufferPointer(start: value, count: valueLength)
                    // Refused at the block's end (a stream error); nothing of it is delivered after this field.
                    guard H2FieldRules.isValidTrailer(name: name, value: value) else {
                        session.trailerRefused = stream
                        return 0
                    }
                    session.delegate?.h2RequestTrailer(stream, name: name, value: value)
                }
                return 0
            }
            let fits = session.head.add(
                name: UnsafeRawBufferPointer(start: name, count: nameLength),
                value: UnsafeRawBufferPointer(start: value, count: valueLength))
            if !fits {
                session.refuse(.headerListTooLarge)
                return callbackFailure
            }
            return 0
        }
    }

    static let onFrameReceived: nghttp2_on_frame_recv_callback = { _, frame, userData in
        guard let frame else { return 0 }
        return withOwner(userData) { session in
            let stream = sidecar_h2_frame_stream(frame)
            let flags = sidecar_h2_frame_flags(frame)
            let endStream = flags & endStreamFlag != 0
            switch UInt32(sidecar_h2_frame_type(frame)) {
            case NGHTTP2_HEADERS.rawValue:
                session.headerBlockBytes = 0
                if stream == session.headStream {
                    session.headStream = 0
                    session.activeStreams += 1
                    do {
                        let outcome = try session.head.finish(bodyFollows: !endStream)
                        if !endStream, let length = session.head.contentLength {
                            session.declaredBodies.expect(stream, length: length)
                        }
                        session.delegate?.h2Request(stream, outcome, endStream: endStream)
                    } catch {
                        session.reset(stream, code: NGHTTP2_PROTOCOL_ERROR.rawValue)
                    }
                } else {
                    // Trailers: they end the stream (RFC 9113 §8.1), with fields it allows, after
                    // as many body bytes as the content-length said.
                    let refused = session.trailerRefused == stream
                    if refused { session.trailerRefused = 0 }
                    if refused || !endStream || !session.declaredBodies.ended(stream) {
                        session.reset(stream, code: NGHTTP2_PROTOCOL_ERROR.rawValue)
                    } else {
                        session.delegate?.h2RequestEnded(stream)
                    }
                }
            case NGHTTP2_DATA.rawValue:
                if endStream {
                    if session.declaredBodies.ended(stream) {
                        session.delegate?.h2RequestEnded(stream)
                    } else {
                        session.reset(stream, code: NGHTTP2_PROTOCOL_ERROR.rawValue)
                    }
                } else if sidecar_h2_frame_length(frame) == 0 {
                    guard session.guardian.control.take(nowMs: session.now) else {
                        session.refuse(.controlFlood)
                        return callbackFailure
                    }
                }
            case NGHTTP2_RST_STREAM.rawValue:
                guard session.guardian.resets.take(nowMs: session.now) else {
                    session.refuse(.rapidReset)
                    return callbackFailure
                }
            case NGHTTP2_PING.rawValue, NGHTTP2_SETTINGS.rawValue:
                if flags & ackFlag == 0, !session.guardian.control.take(nowMs: session.now) {
                    session.refuse(.controlFlood)
                    return callbackFailure
                }
            default:
                break
            }
            return 0
        }
    }

    static let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, stream, data, length, userData in
        guard let data else { return 0 }
        return withOwner(userData) { session in
            if !session.declaredBodies.isEmpty {
                switch session.declaredBodies.received(stream, count: length) {
                case .deliver:
                    break
                case .refuse:
                    session.reset(stream, code: NGHTTP2_PROTOCOL_ERROR.rawValue)
                    session.discard(length)
                    return 0
                case .drop:
                    session.discard(length)
                    return 0
                }
            }
            session.delegate?.h2RequestData(stream, UnsafeRawBufferPointer(start: data, count: length))
            return 0
        }
    }

    static let onStreamClose: nghttp2_on_stream_close_callback = { _, stream, errorCode, userData in
        return withOwner(userData) { session in
            session.declaredBodies.forget(stream)
            if session.trailerRefused == stream { session.trailerRefused = 0 }
            if stream == session.headStream {
                session.headStream = 0
            } else if session.activeStreams > 0 {
                session.activeStreams -= 1
                session.delegate?.h2StreamClosed(stream, errorCode: errorCode)
            }
            return 0
        }
    }

    static let readBody: nghttp2_data_source_read_callback = { _, stream, buffer, length, flags, _, userData in
        guard let buffer, let flags else { return ssize_t(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
        return withOwner(userData) { session in
            guard let delegate = session.delegate else { return ssize_t(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            switch delegate.h2ResponseBody(stream, into: UnsafeMutableRawBufferPointer(start: buffer, count: length)) {
            case .deferred:
                return ssize_t(NGHTTP2_ERR_DEFERRED.rawValue)
            case .bytes(let count, let end):
                if end { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
                return count
            case .lastBeforeTrailers(let count, let trailers):
                flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
                if session.submitTrailers(stream, trailers) { flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue }
                return count
            }
        }
    }
}
