/// What a client connection does next, decided from what happened to it: whether the
/// exchange keeps the connection alive, whether a failed upstream request is retried, which
/// deadline runs, when the next head is read and when the connection closes. No sockets,
/// timers or worker: `ClientConnection` reports each event and performs the action it gets
/// back. An event that cannot happen in the current phase is a bug and traps.
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
        var connectMs: Int64
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

    enum Event: Equatable {
        /// The PROXY protocol header was read: the client's own bytes follow.
        case proxyHeaderRead
        case handshakeFinished
        /// Waiting for a head with nothing of one buffered.
        case inputIdle
        /// Part of a head arrived, the rest is awaited.
        case headIncomplete
        case headParsed(keepAlive: Bool, hasBody: Bool, draining: Bool)
        /// The sidecar refuses the request (400, 408, 413, 431, 503): answer, then close.
        case refused
        case requestBodyComplete
        /// An answer goes out while the request body may still be unread: it cannot be
        /// framed away, so the connection closes after the answer.
        case answerWithoutReadingBody
        /// The response cannot be delimited otherwise, or the exchange went wrong in a way
        /// that leaves the connection unusable.
        case mustClose
        case finalHeadWritten
        /// The client's input ended: `clean` for an orderly half-close.
        case inputEnded(clean: Bool)
        case upstreamConnecting
        /// The exchange waits on the upstream for at most `ms`.
        case upstreamWaiting(ms: Int64)
        case upstreamBytes
        /// The upstream failed before a response head. `idempotent`: a method safe to repeat
        /// with no body; `reset`: the upstream reset the connection (it never read the
        /// request); `bodyKept`: a copy of the whole request body is at hand.
        case upstreamFailed(reused: Bool, idempotent: Bool, reset: Bool, bodyKept: Bool)
        /// The upstream deadline passed with no progress on either side.
        case upstreamSilent(responseStarted: Bool)
        case localBodyStarted
        case localAnswerPending
        case localAnswered
        case tunnelStarted
        case exchangeFinished(draining: Bool, drainGraceOver: Bool)
        /// Graceful shutdown began.
        case drain
        case closeRequested(outputPending: Bool)
        case outputDrained
        case deadlineFired
        case closed
    }

    enum Action: Equatable {
        case none
        case arm(Deadline, ms: Int64)
        case cancelDeadline
        /// Answer the request already read, then close: stop reading meanwhile.
        case stopReading
        /// The client is gone: log an exchange in progress and close.
        case end
        /// A refusal outside an exchange starts one of its own (fresh request id).
        case startRefusal
        case retryUpstream
        case failUpstream
        case readNextHead
        case beginClosing
        /// Keep writing the output for at most `ms`, reading and discarding input.
        case awaitOutput(ms: Int64)
        /// Half-close, discard input for at most `ms`, then close.
        case lingerClose(ms: Int64)
        case respondLocally
        case close
        case refuseTimedOutHead
        /// The PROXY protocol header did not arrive in time: count it, then close.
        case refuseProxyHeader
        case answerLocalTimeout
        case refuseTimedOutLocalBody
        case connectTimedOut
        case checkUpstream
        case abortExchange
        case upstreamTimedOut
        case requestTimedOut
    }

    /// `connectMs` is set per exchange, to its upstream's connect timeout.
    var timeouts: Timeouts
    /// A TLS handshake follows the PROXY header.
    private let handshakeFollows: Bool
    private(set) var phase = Phase.waitingForHead
    private(set) var deadline = Deadline.none
    private(set) var course = Course()

    /// A TLS handshake is part of getting a request head: it has the header deadline from accept,
    /// and so has a PROXY protocol header (`proxyHeader`) together with the handshake after it.
    init(timeouts: Timeouts, handshake: Bool, proxyHeader: Bool = false) {
        self.timeouts = timeouts
        handshakeFollows = handshake
        deadline = proxyHeader ? .proxyHeader : handshake ? .handshake : .idle
    }

    /// The deadline a new connection starts with.
    var initialDeadline: Action { .arm(deadline, ms: deadline == .idle ? timeouts.idleMs : timeouts.headerMs) }

    mutating func receive(_ event: Event) -> Action {
        switch event {
        case .proxyHeaderRead:
            guard deadline == .proxyHeader else { return .none }
            guard !handshakeFollows else {
                deadline = .handshake  // the timer armed at accept keeps running
                return .none
            }
            return arm(.idle, timeouts.idleMs)
        case .handshakeFinished:
            // After the handshake the connection is idle like a new plain one (a browser's
            // preconnect waits here); a head then has the header deadline from its first byte.
            return deadline == .handshake ? arm(.idle, timeouts.idleMs) : .none
        case .inputIdle:
            expect(.waitingForHead, event)
            return deadline == .idle ? .none : arm(.idle, timeouts.idleMs)
        case .headIncomplete:
            expect(.waitingForHead, event)
            // The total deadline runs from the head's first byte, not per read.
            return deadline == .header ? .none : arm(.header, timeouts.headerMs)
        case .headParsed(let keepAlive, let hasBody, let draining):
            expect(.waitingForHead, event)
            phase = .exchanging
            deadline = .none  // the next arm reschedules the pending timer
            course = Course(keepAlive: keepAlive && !draining, requestBodyDone: !hasBody)
            return .none
        case .refused:
            guard phase == .exchanging else {
                phase = .exchanging
                course = Course(keepAlive: false)
                return .startRefusal
            }
            course.keepAlive = false
            return .none
        case .requestBodyComplete:
            expect(.exchanging, event)
            course.requestBodyDone = true
            return .none
        case .answerWithoutReadingBody:
            if !course.requestBodyDone { course.keepAlive = false }
            return .none
        case .mustClose:
            course.keepAlive = false
            return .none
        case .finalHeadWritten:
            expect(.exchanging, event)
            course.promisedKeepAlive = course.keepAlive
            return .none
        case .inputEnded(let clean):
            // Half-close after a complete request: answer it, then close.
            guard clean, phase == .exchanging, course.requestBodyDone else { return .end }
            course.keepAlive = false
            return .stopReading
        case .upstreamConnecting:
            expect(.exchanging, event)
            return arm(.connect, timeouts.connectMs)
        case .upstreamWaiting(let ms):
            return arm(.upstream, ms)
        case .upstreamBytes:
            course.sawResponseBytes = true
            return .none
        case .upstreamFailed(let reused, let idempotent, let reset, let bodyKept):
            guard phase == .exchanging else { return .none }
            let replayable = idempotent || (reset && course.requestBodyDone && bodyKept)
            guard reused, !course.retried, !course.sawResponseBytes, replayable else { return .failUpstream }
            course.retried = true
            return .retryUpstream
        case .upstreamSilent(let responseStarted):
            if phase != .exchanging { return .close }
            if responseStarted { return .abortExchange }
            return course.requestBodyDone ? .upstreamTimedOut : .requestTimedOut
        case .localBodyStarted:
            expect(.exchanging, event)
            return arm(.local, timeouts.headerMs)
        case .localAnswerPending:
            expect(.exchanging, event)
            course.awaitingLocal = true
            return arm(.local, timeouts.upstreamMs + 1_000)  // a backstop behind Apple's own timeout
        case .localAnswered:
            guard course.awaitingLocal, phase == .exchanging else { return .none }  // late: dropped
            course.awaitingLocal = false
            return .respondLocally
        case .tunnelStarted:
            expect(.exchanging, event)
            phase = .tunnel
            deadline = .none
            return .cancelDeadline
        case .exchangeFinished(let draining, let drainGraceOver):
            course.awaitingLocal = false
            guard course.keepAlive, phase == .exchanging, !draining || !drainGraceOver else { return .beginClosing }
            phase = .waitingForHead
            deadline = .none  // reading the next head arms the idle or header deadline
            return .readNextHead
        case .drain:
            // The current exchange ends with `close` unless its head already promised
            // keep-alive: then the connection counts as idle after it.
            if !course.promisedKeepAlive { course.keepAlive = false }
            return .none
        case .closeRequested(let outputPending):
            guard phase != .closed else { return .none }
            phase = .closing
            deadline = .linger
            return outputPending ? .awaitOutput(ms: timeouts.idleMs) : .lingerClose(ms: timeouts.lingerMs)
        case .outputDrained:
            guard phase == .closing else { return .none }
            deadline = .linger
            return .lingerClose(ms: timeouts.lingerMs)
        case .deadlineFired:
            let kind = deadline
            deadline = .none
            return expired(kind)
        case .closed:
            guard phase != .closed else { return .none }
            phase = .closed
            deadline = .none
            course.awaitingLocal = false
            return .cancelDeadline
        }
    }

    private mutating func expired(_ kind: Deadline) -> Action {
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

    private mutating func arm(_ kind: Deadline, _ ms: Int64) -> Action {
        deadline = kind
        return .arm(kind, ms: ms)
    }

    private func expect(_ expected: Phase, _ event: Event) {
        guard phase == expected else { preconditionFailure("\(event) in phase \(phase)") }
    }
}
