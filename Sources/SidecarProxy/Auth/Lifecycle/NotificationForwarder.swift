import Logging
import SidecarApple
import SidecarCrypto
import SidecarEvent
import SidecarStore

/// Delivers verified account events to `notifications.forward_to`: each queued
/// forward is POSTed as JSON until the upstream answers 2xx, oldest first, retried with
/// exponential back-off (1 s doubling to 5 min) while it answers otherwise or cannot be
/// reached. The queue is the store's, so with `file:` an undelivered event survives a
/// restart and its back-off resumes where it was. One forwarder per process (on worker 0's
/// loop): several would race to deliver the same event.
final class NotificationForwarder {
    private let loop: EventLoop
    private var settings: AuthSettings
    private let metrics: MetricsRecorder
    private let logger = Logger(label: "sidecar.notifications")
    private var client: AppleHTTPClient?
    private var doorbell: Wakeup?
    private var timer: Timer?
    private var sending = false
    /// Consecutive failures of the event at the head of the queue (logged once per outage).
    private var failing = false

    static let firstRetryMs: Int64 = 1_000
    static let maximumRetryMs: Int64 = 300_000
    /// Pending forwards are looked at this often even without a doorbell (a safety net).
    static let pollMs: Int64 = 5_000

    init(loop: EventLoop, settings: AuthSettings, metrics: MetricsRecorder) {
        self.loop = loop
        self.settings = settings
        self.metrics = metrics
        timer = Timer(loop: loop) { [unowned self] in self.deliverNext() }
        if let channel = settings.shared.forwardDoorbell {
            doorbell = Wakeup(loop: loop, channel: channel) { [unowned self] in self.deliverNext() }
        }
        client = makeClient(settings)
        timer?.schedule(afterMilliseconds: 0)  // what a previous run left undelivered
    }

    /// A reload: a new target takes effect with the next attempt.
    func apply(_ new: AuthSettings) {
        let changed = new.lifecycle.forwardToText != settings.lifecycle.forwardToText
        settings = new
        if changed { client = makeClient(new) }
        if !sending { timer?.schedule(afterMilliseconds: 0) }
    }

    func stop() {
        timer?.cancel()
        doorbell = nil
    }

    private func makeClient(_ settings: AuthSettings) -> AppleHTTPClient? {
        guard let target = settings.lifecycle.forwardTo else { return nil }
        do {
            return try AppleHTTPClient(
                base: loop.base, configuration: .init(endpoint: target.endpoint, connectTimeout: 5, totalTimeout: 10))
        } catch {
            logger.error("notification forwarding disabled", metadata: ["error": "\(error)"])
            return nil
        }
    }

    private func deliverNext() {
        guard !sending, let client, let target = settings.lifecycle.forwardTo else { return }
        settings.shared.store.pendingForwards { [self] result in
            guard case .success(let pending) = result else {
                // The store cannot list them now (Redis still connecting or down): look again
                // shortly, so forwards queued before a restart are not left until the next event.
                timer?.schedule(afterMilliseconds: 1_000)
                return
            }
            guard let next = pending.first else {
                // A shared store's queue also fills at other replicas (and keeps what a
                // replica that went away had queued): look again now and then.
                if settings.shared.store.health.backend == "redis" { timer?.schedule(afterMilliseconds: Self.pollMs) }
                return
            }
            let wait = backoffRemainingMs(next)
            if wait > 0 {
                timer?.schedule(afterMilliseconds: wait)
                return
            }
            sending = true
            let request = AppleHTTPRequest(method: .POST, path: target.path, contentType: "application/json", body: next.payload)
            client.send(request) { [self] result in
                sending = false
                if case .response(let response) = result, (200..<300).contains(response.status) {
                    delivered(next)
                } else {
                    retry(next, because: Self.describe(result))
                }
            }
        }
    }

    private func delivered(_ forward: PendingForward) {
        settings.shared.store.ackForward(forward.id) { [self] _ in
            metrics.recordForward(delivered: true)
            if failing {
                failing = false
                logger.notice("notification forwarding recovered", metadata: ["to": "\(settings.lifecycle.forwardToText ?? "")"])
            }
            logger.info("notification forwarded", metadata: [
                "attempts": .stringConvertible(forward.attempts + 1), "to": "\(settings.lifecycle.forwardToText ?? "")",
            ])
            timer?.schedule(afterMilliseconds: 0)
        }
    }

    private func retry(_ forward: PendingForward, because reason: String) {
        settings.shared.store.recordForwardAttempt(forward.id) { [self] _ in
            metrics.recordForward(delivered: false)
            let delay = Self.delayMs(afterAttempts: forward.attempts + 1)
            if !failing {
                failing = true
                logger.warning("notification forward failed; retrying with back-off", metadata: [
                    "to": "\(settings.lifecycle.forwardToText ?? "")", "error": "\(reason)",
                    "retry_in_ms": .stringConvertible(delay),
                ])
            }
            timer?.schedule(afterMilliseconds: delay)
        }
    }

    /// 1 s, 2 s, 4 s, … up to 5 min.
    static func delayMs(afterAttempts attempts: UInt32) -> Int64 {
        guard attempts > 0 else { return 0 }
        let shift = min(Int64(attempts - 1), 20)
        return min(maximumRetryMs, firstRetryMs << shift)
    }

    /// How long until the head of the queue may be tried again (its attempts survive a
    /// restart, so a restart does not hammer a failing upstream).
    private func backoffRemainingMs(_ forward: PendingForward) -> Int64 {
        guard let last = forward.lastAttemptAt else { return 0 }
        let due = last * 1000 + Self.delayMs(afterAttempts: forward.attempts)
        return max(0, due - UnixTime.now() * 1000)
    }

    private static func describe(_ result: AppleHTTPResult) -> String {
        switch result {
        case .response(let response): return "HTTP \(response.status)"
        case .failure(let failure): return "\(failure)"
        }
    }

    /// The JSON the upstream receives: the verified event, nothing the client could add.
    static func eventJSON(_ event: AppleNotification, source: String) -> [UInt8] {
        var object: [String: JSONValue] = [
            "type": .string(event.type.label), "sub": .string(event.subject),
            "event_time": .integer(event.eventTimeMilliseconds), "jti": .string(event.jwtID),
            "aud": .string(event.audience), "source": .string(source),
        ]
        if let email = event.email { object["email"] = .string(email) }
        if let isPrivate = event.isPrivateEmail { object["is_private_email"] = .bool(isPrivate) }
        return Array(JSONValue.object(object).jsonText.utf8)
    }
}
