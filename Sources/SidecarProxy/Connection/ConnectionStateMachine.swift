/// What a client connection does next, decided from what happened to it: whether the
/// exchange keeps the connection alive, whether a failed upstream request is retried, which
/// deadline runs, when the next head is read and when the connection closes. No sockets,
/// timers or worker: `ClientConnection` reports each event by calling its method and
/// performs the action it gets back. Each event has its own action type, holding only the
/// actions that event can lead to, and no result may be dropped (an unused result is a
/// compiler warning, and warnings fail the lint): what an event asks is handled where it is
/// reported. An event that cannot happen in the current phase is a bug and traps.
struct ConnectionStateMachine {
    enum Phase: Equatable {
        /// Idle, or reading a head (under the total header deadline).
        case waitingForHead
        /// Request body up, response down (the two may overlap), or a local endpoint's
        /// body buffered then its answer awaited.
        case exchanging
        /// After a 101: bytes flow both ways unchanged.
        case tunnel
        /// Flushing the last response, then half-closed and discarding input briefly.
        case closing
        case closed
    }

    /// The one deadline a connection runs at a time.
    enum Deadline: Equatable {
        case none
        /// Between requests (`idle_timeout`).
        case idle
        /// A head's total deadline from its first byte (`header_timeout`).
        case header
        /// A TLS handshake, counted like a head from accept.
        case handshake
        /// A PROXY protocol header (`proxy_protocol`), from accept: the handshake after it
        /// has what is left of the same deadline.
        case proxyHeader
        case connect
        /// No progress from the upstream (or, while it is held back, from the client).
        case upstream
        /// A local endpoint's body arriving, or its answer awaited.
        case local
        /// Writing the last response, then discarding input after the half-close.
        case linger
    }

    struct Timeouts: Equatable {
        var idleMs: Int64
        var headerMs: Int64
        var upstreamMs: Int64
        /// How long input is discarded after the half-close before the connection closes.
        var lingerMs: Int64 = 2_000
    }

    /// The current exchange's course: what it promised the client and what happened so far.
    struct Course: Equatable {
        /// The connection may carry another exchange after this one.
        var keepAlive = true
        /// The final response head went out without `Connection: close`: the client may
        /// already be writing its next request on this connection.
        var promisedKeepAlive = false
        var requestBodyDone = true
        /// The request went to a second upstream connection after the first failed.
        var retried = false
        var sawResponseBytes = false
        /// A local endpoint's answer is due later on this loop.
        var awaitingLocal = false
    }

    /// What an event that moves the deadline asks of the connection's timer.
    enum DeadlineAction: Equatable {
        case none
        case arm(Deadline, ms: Int64)
        case cancel
    }

    /// A refusal (400, 408, 413, 431, 503) outside an exchange starts one of its own (fresh
    /// request id, trace); inside one it ends that exchange.
    enum RefusalAction: Equatable { case startRefusal, answerInExchange }

    /// The client's input ended.
    enum InputEndAction: Equatable {
        /// The client is gone: log an exchange in progress and close.
        case end
        /// A half-close after a complete request: answer it, then close; stop reading.
        case stopReading
    }

    /// The upstream failed before a response head.
    enum UpstreamFailureAction: Equatable { case retry, fail, ignore }

    /// The upstream deadline passed with no progress on either side.
    enum SilenceAction: Equatable { case close, abortExchange, upstreamTimedOut, requestTimedOut }

    /// A local endpoint's answer arrived: answer, or drop it (late: the exchange is over).
    enum LocalAnswerAction: Equatable { case respond, drop }

    /// The exchange is logged: the next head, or the end of the connection.
    enum NextAction: Equatable { case readNextHead, beginClosing }

    /// Closing: keep writing the output for at most `ms` (reading and discarding input), or
    /// half-close, discard input for at most `ms`, then close.
    enum ClosingAction: Equatable {
        case none
        case awaitOutput(ms: Int64)
        case lingerClose(ms: Int64)
    }

    /// The armed deadline passed.
    enum ExpiryAction: Equatable {
        case none
        case close
        /// The PROXY protocol header did not arrive in time: count it, then close.
        case refuseProxyHeader
        case refuseTimedOutHead
        case answerLocalTimeout
        case refuseTimedOutLocalBody
        case connectTimedOut
        /// See whether the upstream (or the client it waits for) made progress meanwhile.
        case checkUpstream
    }

    let timeouts: Timeouts
    /// A TLS handshake follows the PROXY header.
    private let handshakeFollows: Bool
    private(set) var phase = Phase.waitingForHead
    private(set) var deadline = Deadline.none
    private var course = Course()

    /// A TLS handshake is part of getting a request head: it has the header deadline from accept,
    /// and so has a PROXY protocol header (`proxyHeader`) together with the handshake after it.
    init(timeouts: Timeouts, handshake: Bool, proxyHeader: Bool = false) {
        self.timeouts = timeouts
        handshakeFollows = handshake
        deadline = proxyHeader ? .proxyHeader : handshake ? .handshake : .idle
    }

    // MARK: what the exchange's course says

    /// The connection may carry another exchange after this one.
    var keepAlive: Bool { course.keepAlive }
    /// The final response head went out without `Connection: close`.
    var promisedKeepAlive: Bool { course.promisedKeepAlive }
    var requestBodyDone: Bool { course.requestBodyDone }
    /// The request went to a second upstream connection after the first failed.
    var retried: Bool { course.retried }

    // MARK: events, each with the actions it can lead to

    /// The deadline a new connection starts with.
    var initialDeadline: DeadlineAction { .arm(deadline, ms: deadline == .idle ? timeouts.idleMs : timeouts.headerMs) }

    /// The PROXY protocol header was read: the client's own bytes follow.
    mutating func proxyHeaderRead() -> DeadlineAction {
        guard deadline == .proxyHeader else { return .none }
        guard !handshakeFollows else {
            deadline = .handshake  // the timer armed at accept keeps running
            return .none
        }
        return arm(.idle, timeouts.idleMs)
    }

    mutating func handshakeFinished() -> DeadlineAction {
        // After the handshake the connection is idle like a new plain one (a browser's
        // preconnect waits here); a head then has the header deadline from its first byte.
        deadline == .handshake ? arm(.idle, timeouts.idleMs) : .none
    }

    /// Waiting for a head with nothing of one buffered.
    mutating func inputIdle() -> DeadlineAction {
        expect(.waitingForHead, "inputIdle")
        return deadline == .idle ? .none : arm(.idle, timeouts.idleMs)
    }

    /// Part of a head arrived, the rest is awaited.
    mutating func headIncomplete() -> DeadlineAction {
        expect(.waitingForHead, "headIncomplete")
        // The total deadline runs from the head's first byte, not per read.
        return deadline == .header ? .none : arm(.header, timeouts.headerMs)
    }

    mutating func headParsed(keepAlive: Bool, hasBody: Bool, draining: Bool) {
        expect(.waitingForHead, "headParsed")
        phase = .exchanging
        deadline = .none  // the next arm reschedules the pending timer
        course = Course(keepAlive: keepAlive && !draining, requestBodyDone: !hasBody)
    }

    /// The sidecar refuses the request (400, 408, 413, 431, 503): answer, then close.
    mutating func refused() -> RefusalAction {
        guard phase == .exchanging else {
            phase = .exchanging
            course = Course(keepAlive: false)
            return .startRefusal
        }
        course.keepAlive = false
        return .answerInExchange
    }

    mutating func requestBodyComplete() {
        expect(.exchanging, "requestBodyComplete")
        course.requestBodyDone = true
    }

    /// An answer goes out while the request body may still be unread: it cannot be framed
    /// away, so the connection closes after the answer.
    mutating func answerWithoutReadingBody() {
        if !course.requestBodyDone { course.keepAlive = false }
    }

    /// The response cannot be delimited otherwise, or the exchange went wrong in a way that
    /// leaves the connection unusable.
    mutating func mustClose() {
        course.keepAlive = false
    }

    mutating func finalHeadWritten() {
        expect(.exchanging, "finalHeadWritten")
        course.promisedKeepAlive = course.keepAlive
    }

    /// The client's input ended: `clean` for an orderly half-close.
    mutating func inputEnded(clean: Bool) -> InputEndAction {
        guard clean, phase == .exchanging, course.requestBodyDone else { return .end }
        course.keepAlive = false
        return .stopReading
    }

    /// Connecting to the upstream, for at most `timeoutMs` (its `upstream_connect_timeout`).
    mutating func upstreamConnecting(timeoutMs: Int64) -> DeadlineAction {
        expect(.exchanging, "upstreamConnecting")
        return arm(.connect, timeoutMs)
    }

    /// The exchange waits on the upstream for at most `ms`.
    mutating func upstreamWaiting(ms: Int64) -> DeadlineAction {
        arm(.upstream, ms)
    }

    mutating func upstreamBytes() {
        course.sawResponseBytes = true
    }

    /// The upstream failed before a response head. `idempotent`: a method safe to repeat with
    /// no body; `reset`: the upstream reset the connection (it never read the request);
    /// `bodyKept`: a copy of the whole request body is at hand.
    mutating func upstreamFailed(reused: Bool, idempotent: Bool, reset: Bool, bodyKept: Bool) -> UpstreamFailureAction {
        guard phase == .exchanging else { return .ignore }
        let replayable = idempotent || (reset && course.requestBodyDone && bodyKept)
        guard reused, !course.retried, !course.sawResponseBytes, replayable else { return .fail }
        course.retried = true
        return .retry
    }

    mutating func upstreamSilent(responseStarted: Bool) -> SilenceAction {
        if phase != .exchanging { return .close }
        if responseStarted { return .abortExchange }
        return course.requestBodyDone ? .upstreamTimedOut : .requestTimedOut
    }

    mutating func localBodyStarted() -> DeadlineAction {
        expect(.exchanging, "localBodyStarted")
        return arm(.local, timeouts.headerMs)
    }

    mutating func localAnswerPending() -> DeadlineAction {
        expect(.exchanging, "localAnswerPending")
        course.awaitingLocal = true
        return arm(.local, timeouts.upstreamMs + 1_000)  // a backstop behind Apple's own timeout
    }

    mutating func localAnswered() -> LocalAnswerAction {
        guard course.awaitingLocal, phase == .exchanging else { return .drop }  // late
        course.awaitingLocal = false
        return .respond
    }

    mutating func tunnelStarted() -> DeadlineAction {
        expect(.exchanging, "tunnelStarted")
        phase = .tunnel
        deadline = .none
        return .cancel
    }

    mutating func exchangeFinished(draining: Bool, drainGraceOver: Bool) -> NextAction {
        course.awaitingLocal = false
        guard course.keepAlive, phase == .exchanging, !draining || !drainGraceOver else { return .beginClosing }
        phase = .waitingForHead
        deadline = .none  // reading the next head arms the idle or header deadline
        return .readNextHead
    }

    /// Graceful shutdown began. The current exchange ends with `close` unless its head
    /// already promised keep-alive: then the connection counts as idle after it.
    mutating func drain() {
        if !course.promisedKeepAlive { course.keepAlive = false }
    }

    mutating func closeRequested(outputPending: Bool) -> ClosingAction {
        guard phase != .closed else { return .none }
        phase = .closing
        deadline = .linger
        return outputPending ? .awaitOutput(ms: timeouts.idleMs) : .lingerClose(ms: timeouts.lingerMs)
    }

    mutating func outputDrained() -> ClosingAction {
        guard phase == .closing else { return .none }
        deadline = .linger
        return .lingerClose(ms: timeouts.lingerMs)
    }

    mutating func deadlineFired() -> ExpiryAction {
        let kind = deadline
        deadline = .none
        return expired(kind)
    }

    mutating func closed() -> DeadlineAction {
        guard phase != .closed else { return .none }
        phase = .closed
        deadline = .none
        course.awaitingLocal = false
        return .cancel
    }

    private mutating func expired(_ kind: Deadline) -> ExpiryAction {
        switch kind {
        case .none: return .none
        case .idle, .linger, .handshake: return .close
        case .proxyHeader: return .refuseProxyHeader
        case .header: return .refuseTimedOutHead
        case .local:
            guard course.awaitingLocal else { return .refuseTimedOutLocalBody }
            course.awaitingLocal = false  // answered 504 now; the late answer is dropped
            return .answerLocalTimeout
        case .connect: return .connectTimedOut
        case .upstream: return .checkUpstream
        }
    }

    private mutating func arm(_ kind: Deadline, _ ms: Int64) -> DeadlineAction {
        deadline = kind
        return .arm(kind, ms: ms)
    }

    private func expect(_ expected: Phase, _ event: StaticString) {
        guard phase == expected else { preconditionFailure("\(event) in phase \(phase)") }
    }
}
