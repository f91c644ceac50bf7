import CEvent
import Glibc

/// One libevent `event_base`, driven by exactly one thread. Every object created on a loop
/// (streams, timers, listeners) must only be touched from that loop's thread.
public final class EventLoop {
    public let base: OpaquePointer
    /// Where this loop's streams read into before appending what arrived to their input
    /// queue: a small read then costs a small chain, not a fresh 64 KiB one.
    let readScratch: UnsafeMutableRawPointer
    public static let readScratchSize = 64 * 1024
    /// Streams whose output waits for the end of this iteration (`Stream.flushAtEndOfIteration`),
    /// each retained once until it is written: an array of strong references would retain
    /// and release each stream three more times per flush on the way in and out.
    private var pendingFlushes: [Unmanaged<Stream>] = []
    /// `nowMilliseconds` of the current iteration, -1 until asked (only while `run` drives
    /// the loop): a proxied request asks ~10 times, and libevent's own cache costs a call and
    /// ~30 instructions each time (callgrind), a clock read outside its dispatch.
    private var iterationNowMs: Int64 = -1
    private var iterating = false
    /// The deferred writes of an iteration in one system call; nil where io_uring is refused.
    /// Made on the first iteration that defers several writes: loops that never do (the
    /// control thread's, the Apple client's) map no ring.
    private lazy var sendBatch: SendBatch? = SendBatch()
    /// System calls the batch made (tests).
    var batchedSendCalls: Int { sendBatch?.calls ?? 0 }

    /// Whether the deferred writes of an iteration go out in one system call (io_uring); not
    /// where the kernel refuses it, e.g. under a container runtime's default seccomp profile.
    public var usesBatchedSends: Bool { sendBatch != nil }

    /// Whether this kernel lets loops batch their sends (asked once, with a ring of its own).
    public static let batchedSendsAvailable: Bool = SendBatch() != nil

    /// Work queued for this loop's next turn (made on first use).
    public var nextTurn: NextTurn {
        if let nextTurnIfMade { return nextTurnIfMade }
        let made = NextTurn(loop: self)
        nextTurnIfMade = made
        return made
    }
    private var nextTurnIfMade: NextTurn?

    /// The loop whose `run` is on this thread's stack, if any: where a callee that has no
    /// loop of its own (a store on this machine) queues a completion promised for later.
    public static var current: EventLoop? {
        pthread_getspecific(currentLoopKey).map { Unmanaged<EventLoop>.fromOpaque($0).takeUnretainedValue() }
    }

    public init() throws(EventError) {
        guard let config = event_config_new() else { throw .libevent("event_config_new") }
        defer { event_config_free(config) }
        // Batch event_add/event_del into the next epoll_wait: a write interest added and
        // removed within one iteration then costs no epoll_ctl at all.
        _ = event_config_set_flag(config, Int32(EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST.rawValue))
        // Single-threaded by construction: no locks needed.
        _ = event_config_set_flag(config, Int32(EVENT_BASE_FLAG_NOLOCK.rawValue))
        // Timers on CLOCK_MONOTONIC, not libevent's default CLOCK_MONOTONIC_COARSE: the coarse
        // clock lags by up to a scheduler tick (4 ms at HZ=250), so a timer armed from it fires
        // up to a tick before its duration by a fresh clock, and "at least N" is not kept.
        _ = event_config_set_flag(config, Int32(EVENT_BASE_FLAG_PRECISE_TIMER.rawValue))
        guard let base = event_base_new_with_config(config) else {
            throw .libevent("event_base_new_with_config")
        }
        self.base = base
        readScratch = UnsafeMutableRawPointer.allocate(byteCount: Self.readScratchSize, alignment: 16)
    }

    deinit {
        nextTurnIfMade?.detach()  // its event goes before the base does
        for stream in pendingFlushes { stream.release() }
        event_base_free(base)
        readScratch.deallocate()
    }

    /// Runs until `stop()` or until nothing is registered any more: one iteration (wait, then
    /// every ready callback) at a time, then the output deferred by those callbacks.
    public func run() {
        iterating = true
        let outer = pthread_getspecific(currentLoopKey)
        pthread_setspecific(currentLoopKey, Unmanaged.passUnretained(self).toOpaque())
        defer {
            iterating = false
            iterationNowMs = -1
            pthread_setspecific(currentLoopKey, outer)
        }
        while true {
            flushDeferred()
            iterationNowMs = -1
            let result = event_base_loop(base, EVLOOP_ONCE)
            iterationNowMs = -1
            flushDeferred()
            if result != 0 || event_base_got_break(base) != 0 || event_base_got_exit(base) != 0 { return }
        }
    }

    func deferFlush(_ stream: Stream) { pendingFlushes.append(.passRetained(stream)) }

    /// Writes the deferred output; a stream's delegate hears of a failed write as of a failed
    /// read. Delegates may defer more output meanwhile: it is written in the same pass.
    private func flushDeferred() {
        guard !pendingFlushes.isEmpty else { return }
        if pendingFlushes.count > 1, let batch = sendBatch {
            batch.send(pendingFlushes)
            if !batch.isUsable { sendBatch = nil }  // the ring failed: plain sends from now on
        }
        var i = 0
        while i < pendingFlushes.count {
            // Guaranteed by the list's own reference, released below.
            pendingFlushes[i]._withUnsafeGuaranteedRef { $0.writeDeferredOutput() }
            i += 1
        }
        for stream in pendingFlushes { stream.release() }
        pendingFlushes.removeAll(keepingCapacity: true)
    }

    /// Makes `run()` return after the current callbacks.
    public func stop() { _ = event_base_loopbreak(base) }

    /// The loop's cached time in milliseconds (libevent's: the wall clock as of the
    /// iteration's wake-up); cheap. Within one iteration of `run` it is read once: the
    /// callbacks of an iteration all see the time it woke at, as libevent's cache has them
    /// see, and the deferred writes after it the time they began.
    ///
    /// The cached time is for ordering and for costs. Where a duration is promised ("at least
    /// N from now"), its start is `refreshedNowMilliseconds()`: an iteration that ran long has
    /// a cached time already that much in the past, and a deadline counted from it would end
    /// early by any fresh clock.
    public var nowMilliseconds: Int64 {
        if iterationNowMs >= 0 { return iterationNowMs }
        var tv = timeval()
        _ = event_base_gettimeofday_cached(base, &tv)
        let ms = Int64(tv.tv_sec) * 1000 + Int64(tv.tv_usec) / 1000
        if iterating { iterationNowMs = ms }
        return ms
    }
}

/// Holds `EventLoop.current` for each thread.
private let currentLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

extension EventLoop {
    /// Reads the clock afresh (one `clock_gettime`) and makes it the iteration's time from
    /// here on, for libevent's timers too: the start of a deadline with a promised minimum.
    public func refreshedNowMilliseconds() -> Int64 {
        _ = event_base_update_cache_time(base)
        iterationNowMs = -1
        return nowMilliseconds
    }
}

public enum EventError: Error, CustomStringConvertible, Equatable {
    case libevent(String)
    case system(String, errno: Int32)
    case address(String)

    public var description: String {
        switch self {
        case .libevent(let what): return "\(what) failed"
        case .system(let what, let code): return "\(what): \(String(cString: strerror(code)))"
        case .address(let text): return "invalid address: \(text)"
        }
    }
}

extension timeval {
    init(milliseconds: Int64) {
        self.init(tv_sec: Int(milliseconds / 1000), tv_usec: Int((milliseconds % 1000) * 1000))
    }
}
