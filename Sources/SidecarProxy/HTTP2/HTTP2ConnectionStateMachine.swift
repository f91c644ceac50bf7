/// What an HTTP/2 connection does next, apart from its streams (libnghttp2 keeps their states,
/// `StreamTable` their exchanges): whether it takes new streams, how its last frames leave,
/// which deadline runs, and when the session may be entered. Pure, as the HTTP/1.1
/// `ConnectionStateMachine`: `HTTP2Connection` reports each event by calling its method and
/// performs the action it gets back (each event its own action type, none to be dropped);
/// `HTTP2ConnectionStateMachineTests` tables it without sockets.
struct HTTP2ConnectionStateMachine {
    enum State: Equatable {
        /// Taking streams; `draining`: GOAWAY went out, the streams already taken finish.
        case serving(draining: Bool)
        /// The session is over; its last frames are on their way to the socket.
        case flushingLastFrames
        /// The write side is shut; what the client still sends is read and discarded until it
        /// closes or the linger deadline passes, as HTTP/1.1's lingering close does.
        case lingering
        case closed
    }

    /// Where sending stands: libnghttp2's session must not be entered from inside one of its
    /// own calls, so a send asked for meanwhile runs when the call returns.
    enum Sending: Equatable {
        case idle
        case inSession(sendAgain: Bool)
    }

    enum DrainAction: Equatable { case sendGoAway, none }

    /// A send was asked for.
    enum SendAction: Equatable {
        case sendNow
        /// Inside a session call: it runs when the call returns.
        case afterSessionCall
        case none
    }

    /// The session has nothing left to serve.
    enum FinishAction: Equatable {
        case none
        /// Wait for the output to drain (under the linger deadline), then finish again.
        case awaitFlush
        /// Discard input, shut the write side, arm the linger deadline.
        case shutdownAndLinger
    }

    /// The deadline the connection runs now.
    enum DeadlineAction: Equatable {
        case at(ms: Int64)
        case cancel
    }

    enum ExpiryAction: Equatable {
        case none
        case close
        /// Idle, or a request head left unfinished: GOAWAY and end the session.
        case goAwayAndTerminate
    }

    struct Timeouts: Equatable {
        var idleMs: Int64
        var headerMs: Int64
        var lingerMs: Int64 = 2_000
    }

    let timeouts: Timeouts
    private(set) var state = State.serving(draining: false)
    private(set) var sending = Sending.idle
    /// A send is queued for the loop's next turn.
    private(set) var sendScheduled = false

    init(timeouts: Timeouts) {
        self.timeouts = timeouts
    }

    // MARK: queries

    var isClosed: Bool { state == .closed }
    /// New streams are taken (not draining, not finishing).
    var takesStreams: Bool { state == .serving(draining: false) }
    var isDraining: Bool { state == .serving(draining: true) }
    /// Past the session's end: only the last frames and the linger remain.
    var isFinishing: Bool { state == .flushingLastFrames || state == .lingering }
    /// Input is discarded unread.
    var discardsInput: Bool { state == .lingering }

    // MARK: events

    /// Graceful shutdown began (or the descriptor limit shed the connection).
    mutating func drain() -> DrainAction {
        guard state == .serving(draining: false) else { return .none }
        state = .serving(draining: true)
        return .sendGoAway
    }

    /// Entering `session.receive` or `session.send`.
    mutating func enterSession() {
        sending = .inSession(sendAgain: false)
    }

    /// `session.receive` returned; the caller sends next, which covers any send asked for
    /// during the call.
    mutating func receiveReturned() {
        sending = .idle
    }

    /// `session.send` returned: whether to send again (a send was asked for during the call).
    mutating func sendReturned() -> Bool {
        let again = sending == .inSession(sendAgain: true)
        sending = .idle
        return again
    }

    mutating func sendRequested() -> SendAction {
        switch (state, sending) {
        case (.closed, _):
            return .none
        case (_, .inSession):
            sending = .inSession(sendAgain: true)
            return .afterSessionCall
        case (_, .idle):
            return .sendNow
        }
    }

    /// An exchange flushed: send on the loop's next turn. Whether to queue it (once a turn).
    mutating func sendWanted() -> Bool {
        guard !sendScheduled, state != .closed else { return false }
        sendScheduled = true
        return true
    }

    /// The queued send's turn came: whether it still runs.
    mutating func scheduledSendRuns() -> Bool {
        sendScheduled = false
        return state != .closed
    }

    /// The session has nothing left to serve (it ended, or draining with no stream left).
    mutating func sessionFinished(outputPending: Bool) -> FinishAction {
        switch state {
        case .lingering, .closed:
            return .none
        case .flushingLastFrames:
            guard !outputPending else { return .none }
            state = .lingering
            return .shutdownAndLinger
        case .serving:
            if outputPending {
                state = .flushingLastFrames
                return .awaitFlush
            }
            state = .lingering
            return .shutdownAndLinger
        }
    }

    /// The deadline now: the linger while finishing; a request head being received must be
    /// complete within `header_timeout` of its first byte; with no stream open the connection
    /// may stay `idle_timeout` after its last activity (`header_timeout` before it answered
    /// anything of note); streams open, none.
    func deadline(nowMs: Int64, headBeganMs: Int64, streamsOpen: Bool, lastActiveMs: Int64, answered: Bool) -> DeadlineAction {
        if isFinishing { return .at(ms: nowMs + min(timeouts.lingerMs, timeouts.headerMs)) }
        if headBeganMs > 0 { return .at(ms: headBeganMs + timeouts.headerMs) }
        if !streamsOpen { return .at(ms: lastActiveMs + (answered ? timeouts.idleMs : timeouts.headerMs)) }
        return .cancel
    }

    func deadlineFired(headInProgress: Bool, streamsOpen: Bool) -> ExpiryAction {
        if isFinishing { return .close }
        if state == .closed { return .none }
        return headInProgress || !streamsOpen ? .goAwayAndTerminate : .none
    }

    /// Whether this is the close (the first).
    mutating func closed() -> Bool {
        guard state != .closed else { return false }
        state = .closed
        return true
    }
}
