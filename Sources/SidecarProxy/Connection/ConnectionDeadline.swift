import SidecarEvent

/// A connection's one timer, for whichever deadline its state machine has armed (idle, head,
/// connect, upstream, closing). A later deadline leaves an earlier timer alone — it re-arms for
/// the rest when it fires — so a busy keep-alive connection moving between its idle and
/// upstream deadlines reschedules no timer per request.
struct ConnectionDeadline {
    private let timer: Timer
    /// When the current deadline expires, and when the timer is set to fire (`.max`: not set).
    private var dueMs: Int64 = 0
    private var timerAtMs = Int64.max

    init(loop: EventLoop) { timer = Timer(loop: loop) }

    func onFire(_ body: @escaping () -> Void) { timer.onFire(body) }

    /// Every deadline is a promised minimum (nothing is cut before its timeout has passed), so
    /// it starts at a fresh clock read (`now`), not at the iteration's cached time, and the
    /// part of a millisecond already begun is rounded up: `fired` compares whole milliseconds.
    mutating func start(_ ms: Int64, now: Int64) {
        dueMs = now &+ ms &+ 1
        guard timerAtMs > dueMs || timerAtMs < now else { return }  // fires in time
        timer.schedule(afterMilliseconds: ms &+ 1, clockJustRead: true)
        timerAtMs = dueMs
    }

    /// A deadline at `atMs` on the loop's clock (`now`: its cached time), the timer left alone
    /// when it fires in time. For an owner that computes absolute deadlines (HTTP/2's).
    mutating func start(at atMs: Int64, now: Int64) {
        dueMs = atMs
        guard timerAtMs > atMs || timerAtMs < now else { return }
        timer.schedule(afterMilliseconds: max(1, atMs - now))
        timerAtMs = atMs
    }

    /// No deadline for now. The timer stays set: it fires once for nothing (`firedIfDue`), which
    /// costs less than removing and adding it again around every request.
    mutating func suspend() { dueMs = .max }

    /// The timer fired: true when the deadline `start` set is due; false when none is (after
    /// `suspend`), or when it is later (the timer is set again for it).
    mutating func firedIfDue(now: Int64) -> Bool {
        guard dueMs != .max else {
            timerAtMs = .max
            return false
        }
        return fired(now: now, armed: true)
    }

    mutating func cancel() {
        timer.cancel()
        timerAtMs = .max
    }

    /// The timer fired. True when the deadline is due; false when the timer was early for a
    /// later deadline (`armed`: the machine still has one) and has been set again for it.
    mutating func fired(now: Int64, armed: Bool) -> Bool {
        timerAtMs = .max
        guard armed, now < dueMs else { return true }
        timer.schedule(afterMilliseconds: dueMs - now)
        timerAtMs = dueMs
        return false
    }
}
