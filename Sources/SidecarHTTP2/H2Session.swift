import CNGHTTP2
import SidecarHTTP

/// What a server-side HTTP/2 session reports to the connection that owns it. Every call
/// comes from inside `receive` or `send`, on the connection's loop.
public protocol H2SessionDelegate: AnyObject {
    /// A request's head is complete on a new stream (`H2RequestHead`), or was refused as a
    /// parser refuses an HTTP/1.1 head. A head framed `.chunked` has its body framed as
    /// chunked by the delegate. `endStream`: no body follows.
    func h2Request(_ stream: Int32, _ outcome: consuming H2RequestHead.Outcome, endStream: Bool)
    /// Arrays for the next request head (an earlier head's, so that a busy connection
    /// allocates none per request).
    func h2SpareHead() -> HeadArrays
    /// Request body bytes (flow-controlled: `consume` opens the window again).
    func h2RequestData(_ stream: Int32, _ bytes: UnsafeRawBufferPointer)
    /// One field of the request's trailers (a HEADERS frame after its body).
    func h2RequestTrailer(_ stream: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    /// The request's body is complete (END_STREAM), its trailers with it.
    func h2RequestEnded(_ stream: Int32)
    /// The stream is gone: answered and closed, reset by either side, or refused.
    func h2StreamClosed(_ stream: Int32, errorCode: UInt32)
    /// Up to `buffer.count` bytes of the response body; `.deferred` when none are ready yet
    /// (the delegate calls `resumeBody` when they are).
    func h2ResponseBody(_ stream: Int32, into buffer: UnsafeMutableRawBufferPointer) -> H2Session.Body
    /// The peer misbehaved beyond the session's bounds; GOAWAY is on its way.
    func h2Refused(_ reason: H2Session.Refusal)
}

/// A server-side HTTP/2 session over libnghttp2: bytes in (`receive`), frames out (`send`),
/// stream events to the delegate. It knows nothing of sockets, sessions or upstreams.
///
/// libnghttp2 does the framing, HPACK, flow control and stream states; RFC 9113's message
/// checks are this module's (`H2FieldRules`, `H2RequestHead`, `H2DeclaredBodies`), and so are
/// the bounds a public-facing proxy needs on top (`H2FloodGuard`):
/// the decoded header list per `limits.max_header_bytes` (HPACK bombs), the header block
/// per the same bound (CONTINUATION floods), and rates for resets and control frames.
public final class H2Session {
    public enum Body {
        case bytes(Int, end: Bool)
        /// The last bytes, then these trailer fields (a HEADERS frame that ends the stream).
        case lastBeforeTrailers(Int, H2FieldList)
        case deferred
    }

    public enum Refusal: String, Sendable, CaseIterable {
        case headerListTooLarge = "header_list_too_large"
        case headerBlockTooLarge = "header_block_too_large"
        case continuationFlood = "continuation_flood"
        case rapidReset = "rapid_reset"
        case controlFlood = "control_frame_flood"
        case protocolError = "protocol_error"
    }

    public struct Limits: Sendable {
        public var maxStreams: Int
        public var maxHeaderBytes: Int
        /// Fields a request head may have (`HTTPHeadLimits.maxFields`: 431 beyond).
        public var maxFields: Int
        /// The window each stream (and the connection, times `maxStreams`) gives the client
        /// for request bodies.
        public var streamWindow: Int

        public init(
            maxStreams: Int = 100, maxHeaderBytes: Int = 16 * 1024, maxFields: Int = HTTPHeadLimits.default.maxFields,
            streamWindow: Int = 64 * 1024
        ) {
            self.maxStreams = maxStreams
            self.maxHeaderBytes = maxHeaderBytes
            self.maxFields = maxFields
            self.streamWindow = streamWindow
        }
    }

    private var session: OpaquePointer?
    public unowned(unsafe) var delegate: (any H2SessionDelegate)?
    let limits: Limits
    /// The request head being received (one at a time: header blocks never interleave) and
    /// its stream (0: none).
    var head: H2RequestHead
    var headStream: Int32 = 0
    /// Bytes of the header block (HEADERS + CONTINUATION) now arriving, before decoding.
    var headerBlockBytes = 0
    /// CONTINUATION frames of the header block now arriving.
    var continuations = 0
    static let maxContinuations = 16
    var guardian: H2FloodGuard
    /// Content-lengths the request bodies must match.
    var declaredBodies = H2DeclaredBodies()
    /// The stream whose trailer block (being received) had a field RFC 9113 refuses (0: none).
    var trailerRefused: Int32 = 0
    public private(set) var refusal: Refusal?

    public init(limits: Limits, nowMs: Int64) {
        self.limits = limits
        guardian = H2FloodGuard(maxStreams: limits.maxStreams, nowMs: nowMs)
        head = H2RequestHead(maxBytes: limits.maxHeaderBytes, maxFields: limits.maxFields)
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        H2Callbacks.install(callbacks)
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        // Request bodies are acknowledged as the upstream takes them (`consume`), so a
        // client can never have more in flight than the windows allow.
        nghttp2_option_set_no_auto_window_update(option, 1)
        nghttp2_option_set_max_continuations(option, Self.maxContinuations + 1)
        // libnghttp2's own reset limit stays above `H2FloodGuard`'s, which counts and names it.
        nghttp2_option_set_stream_reset_rate_limit(option, UInt64(limits.maxStreams * 4), UInt64(limits.maxStreams * 2))
        // Above `H2FloodGuard`'s control-frame burst, so the guard (which names it) acts first.
        nghttp2_option_set_max_outbound_ack(option, 4000)
        nghttp2_option_set_max_settings(option, 32)
        // RFC 9113's field and message rules are held by `H2FieldRules`, `H2RequestHead` and
        // `H2DeclaredBodies`, which read each field once for both protocols' grammars.
        nghttp2_option_set_no_http_messaging(option, 1)
        // A closed stream is freed at once rather than kept for RFC 7540's priority tree
        // (deprecated by RFC 9113 §5.3.2): a PRIORITY frame naming it finds the default.
        nghttp2_option_set_no_closed_streams(option, 1)
        var created: OpaquePointer?
        _ = nghttp2_session_server_new2(&created, callbacks, Unmanaged.passUnretained(self).toOpaque(), option)
        session = created
        nghttp2_option_del(option)
        nghttp2_session_callbacks_del(callbacks)
        let settings = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: UInt32(limits.maxStreams)),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: UInt32(limits.streamWindow)),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue), value: UInt32(limits.maxHeaderBytes)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            // RFC 9218 §2.1: no RFC 7540 priority tree (RFC 9113 §5.3.2 deprecates it), so
            // libnghttp2 keeps no dependency tree per stream; responses of equal urgency go out
            // in the order they became ready.
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES.rawValue), value: 1),
        ]
        _ = settings.withUnsafeBufferPointer {
            nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), $0.baseAddress, $0.count)
        }
        // The connection's window: room for every stream's, so one stream's window is the bound.
        let connectionWindow = Int32(min(Int(Int32.max), limits.streamWindow * limits.maxStreams))
        _ = nghttp2_session_set_local_window_size(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, connectionWindow)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    var now: Int64 = 0

    /// Feeds bytes read from the client. Returns false when the session is broken (the
    /// connection sends what `send` still has and closes).
    public func receive(_ bytes: UnsafeRawBufferPointer, nowMs: Int64) -> Bool {
        guard let session, let base = bytes.baseAddress else { return session != nil }
        now = nowMs
        let read = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        if read < 0 {
            if refusal == nil { refusal = .protocolError }
            return false
        }
        return true
    }

    /// Hands the frames ready to go to `append`, one contiguous piece a call, until none is
    /// left or `append` returns false (its socket is full enough). Returns false when the
    /// session failed.
    public func send(_ append: (UnsafeRawBufferPointer) -> Bool) -> Bool {
        guard let session else { return false }
        while true {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            if count < 0 { return false }
            guard count > 0, let data else {
                // Nothing left to send: every queued HEADERS frame has been serialized
                // (response heads are in libnghttp2's regular queue, which it always empties).
                responseHead.unpinHeads()
                return true
            }
            if !append(UnsafeRawBufferPointer(start: data, count: count)) { return true }
        }
    }

    /// Whether the session has finished both ways (after GOAWAY, with nothing to send).
    public var isDone: Bool {
        guard let session else { return true }
        return nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
    }

    public var hasOutput: Bool {
        guard let session else { return false }
        return nghttp2_session_want_write(session) != 0
    }

    /// The list the next response head is written into, emptied (names lowercase as they go
    /// in): `respond` hands it to libnghttp2 by reference.
    public var nextResponseHead: H2FieldList {
        responseHead.removeAll()
        return responseHead
    }

    /// Response heads, kept where libnghttp2 reads them until their frames are serialized.
    private let responseHead = H2FieldList()

    /// Sends the response head written into `nextResponseHead`; `hasBody`: DATA frames follow
    /// through `h2ResponseBody`.
    public func respond(_ stream: Int32, hasBody: Bool) -> Bool {
        guard let session else { return false }
        let fields = responseHead
        let submitted = fields.withNameValues(byReference: true) { list in
            if hasBody {
                var provider = nghttp2_data_provider(
                    source: nghttp2_data_source(ptr: nil), read_callback: H2Callbacks.readBody)
                return nghttp2_submit_response(session, stream, list.baseAddress, list.count, &provider) == 0
            }
            return nghttp2_submit_response(session, stream, list.baseAddress, list.count, nil) == 0
        }
        if submitted { fields.pinHead() }
        return submitted
    }

    /// Trailer fields after `stream`'s body (from the body callback that gives its last bytes).
    func submitTrailers(_ stream: Int32, _ fields: H2FieldList) -> Bool {
        guard let session else { return false }
        return fields.withNameValues { list in nghttp2_submit_trailer(session, stream, list.baseAddress, list.count) == 0 }
    }

    /// More of `stream`'s response body is ready.
    public func resumeBody(_ stream: Int32) {
        guard let session else { return }
        _ = nghttp2_session_resume_data(session, stream)
    }

    /// Ends a stream with RST_STREAM.
    public func reset(_ stream: Int32, code: UInt32 = NGHTTP2_INTERNAL_ERROR.rawValue) {
        guard let session else { return }
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, code)
    }

    /// `count` request body bytes of `stream` have been taken: the client may send as many more.
    public func consume(_ stream: Int32, _ count: Int) {
        guard let session, count > 0 else { return }
        _ = nghttp2_session_consume(session, stream, count)
    }

    /// `count` request body bytes were dropped (their stream is reset): the connection's window
    /// takes them back, as it would had they been consumed.
    func discard(_ count: Int) {
        guard let session, count > 0 else { return }
        _ = nghttp2_session_consume_connection(session, count)
    }

    /// Graceful shutdown: GOAWAY naming the last stream that will be served; streams already
    /// open finish, new ones are refused.
    public func goAway() {
        guard let session else { return }
        _ = nghttp2_submit_goaway(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
            NGHTTP2_NO_ERROR.rawValue, nil, 0)
    }

    /// Ends the session with GOAWAY(`code`); nothing more is read.
    public func terminate(_ code: UInt32) {
        guard let session else { return }
        _ = nghttp2_session_terminate_session(session, code)
    }

    func refuse(_ reason: Refusal) {
        guard refusal == nil else { return }
        refusal = reason
        terminate(NGHTTP2_ENHANCE_YOUR_CALM.rawValue)
        delegate?.h2Refused(reason)
    }

    /// Streams open now (requests in progress).
    public var openStreams: Int { (headStream != 0 ? 1 : 0) + activeStreams }
    /// Request heads begun and not yet complete (a HEADERS frame awaiting its CONTINUATION).
    public var headsInProgress: Int { headStream != 0 ? 1 : 0 }
    var activeStreams = 0
}
