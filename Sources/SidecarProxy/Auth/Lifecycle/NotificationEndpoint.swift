import Foundation
import Logging
import SidecarCrypto
import SidecarStore

/// `POST {prefix}/apple/notifications`: Apple's server-to-server events.
///
/// Order of the steps, so a failure at any point leaves Apple a reason to retry and a retry
/// does no harm: verify (400 for anything invalid, never a change); revoke (idempotent: a
/// subject's cutoff only moves later); queue the forward; then spend the `jti` — a duplicate
/// found there drops the forward it just queued. Every answer that says 200 is recorded in
/// the store first (fsynced with `file:`).
final class NotificationFlow {
    private let settings: AuthSettings
    private let apple: AppleCalls
    private let metrics: MetricsRecorder
    private let request: EndpointRequest
    private let completion: (LocalResponse) -> Void

    /// A notification JWT is at most a few KiB; Apple's keys limit what verifies anyway.
    static let maximumPayloadBytes = 16 * 1024
    /// How long a `jti` is remembered: Apple's notifications expire a day after issue, so a
    /// replay after this fails verification on its own.
    static let jtiRetentionSeconds: Int64 = 2 * 86_400

    init(
        settings: AuthSettings, apple: AppleCalls, metrics: MetricsRecorder, request: EndpointRequest,
        completion: @escaping (LocalResponse) -> Void
    ) {
        self.settings = settings
        self.apple = apple
        self.metrics = metrics
        self.request = request
        self.completion = completion
    }

    func start() {
        guard let payload = Self.payload(of: request.body) else { return refuse("payload_invalid") }
        apple.keys.withKeys { [self] keys in
            guard let keys else { return unavailable("jwks_unavailable") }
            switch verify(payload, keys) {
            case .success(let event): apply(event)
            case .failure(.unknownKey):
                let spanStartNs = apple.spanStart(for: request.trace)
                apple.keys.refetchForUnknownKey { [self] fresh in
                    if spanStartNs != 0 {
                        apple.spans?.recordCall(.appleKeys, of: request.trace, method: .get, startNs: spanStartNs,
                                               status: 0, failed: fresh == nil)
                    }
                    guard let fresh else { return refuse("token_unknown_key") }
                    switch verify(payload, fresh) {
                    case .success(let event): apply(event)
                    case .failure(let error): refuse("token_" + error.reason)
                    }
                }
            case .failure(let error): refuse("token_" + error.reason)
            }
        }
    }

    /// `{"payload": "<JWT>"}` and nothing stranger: the JWT as a string, within bounds.
    static func payload(of body: [UInt8]) -> String? {
        guard !body.isEmpty, body.count <= maximumPayloadBytes + 64,
              let value = try? JSONDecoder().decode(JSONValue.self, from: Data(body)),
              let payload = value.objectValue?["payload"]?.stringValue,
              !payload.isEmpty, payload.utf8.count <= maximumPayloadBytes
        else { return nil }
        return payload
    }

    /// Issuer, signature (RS256 from Apple's keys), times, and `aud` ∈ the Services ID and
    /// the bundle ids (Apple sends events for the primary App ID the user signed in to).
    private func verify(_ token: String, _ keys: JWKSet) -> Result<AppleNotification, JWTError> {
        let verifier = AppleIDTokenVerifier(
            issuer: settings.verifier.issuer, audiences: settings.notificationAudiences, leeway: settings.lifecycle.leeway)
        return Result { () throws(JWTError) in try verifier.verifyNotification(token, keys: keys, now: UnixTime.now()) }
    }

    private func apply(_ event: AppleNotification) {
        let store = settings.shared.store
        guard event.type.revokesSessions else { return queueForward(event) }
        // Every session of the user issued up to the event ends; kept until they all expired.
        let keepUntil = event.eventTimeMilliseconds / 1000 + settings.lifecycle.sessionLifetime + settings.lifecycle.leeway
        let spanStartNs = apple.spanStart(for: request.trace)
        store.revokeSubject(event.subject, issuedAtOrBeforeMs: event.eventTimeMilliseconds, keepUntil: keepUntil) {
            [self] result in
            if spanStartNs != 0 {
                apple.spans?.recordStoreCall(.storeRevoke, of: request.trace, startNs: spanStartNs, failed: result.isFailure)
            }
            if case .failure(let error) = result { return unavailable("store_failed", error: error) }
            // Apple ended the authorization: the kept token is revoked already.
            settings.forgetRefreshToken(event.subject, logger: request.logger)
            queueForward(event)
        }
    }

    private func queueForward(_ event: AppleNotification) {
        guard settings.lifecycle.forwardTo != nil else { return spendJTI(event, queued: nil) }
        let body = NotificationForwarder.eventJSON(event, source: "apple")
        let spanStartNs = apple.spanStart(for: request.trace)
        settings.shared.store.enqueueForward(payload: body) { [self] result in
            if spanStartNs != 0 {
                apple.spans?.recordStoreCall(.storeEnqueue, of: request.trace, startNs: spanStartNs, failed: result.isFailure)
            }
            switch result {
            case .success(let id):
                spendJTI(event, queued: id)
            case .failure(let error):
                // Not silent: the event stays Apple's to retry (503), and the log says why.
                unavailable("forward_queue_failed", error: error)
            }
        }
    }

    private func spendJTI(_ event: AppleNotification, queued: ForwardID?) {
        let store = settings.shared.store
        let expiry = max(UnixTime.now(), event.issuedAt) + Self.jtiRetentionSeconds
        let claimStartNs = apple.spanStart(for: request.trace)
        settings.shared.claimOnce(.notification, Array(event.jwtID.utf8), until: expiry) { [self] claim in
            if claimStartNs != 0 { apple.spans?.recordClaim(of: request.trace, startNs: claimStartNs, claim) }
            switch claim {
            case .claimed:
                if queued != nil { settings.shared.forwardDoorbell?.notify() }
                answer(200, outcome: event.type.revokesSessions ? .revoked : .acknowledged, event: event)
            case .alreadyUsed:
                if let queued {  // Apple's duplicate: forwarded once
                    if claimStartNs == 0 {
                        store.ackForward(queued) { _ in }
                    } else {
                        let ackStartNs = SpanClock.nowNs()
                        store.ackForward(queued) { [self] acked in
                            apple.spans?.recordStoreCall(.storeAck, of: request.trace, startNs: ackStartNs, failed: acked.isFailure)
                        }
                    }
                }
                answer(200, outcome: .duplicate, event: event)
            case .unavailable(let why):
                settings.shared.forwardDoorbell?.notify()  // what was queued is delivered; a retry may repeat it
                unavailable("store_unavailable", error: .unavailable(why))
            }
        }
    }

    private func answer(_ status: Int, outcome: NotificationOutcome, event: AppleNotification) {
        metrics.recordNotification(outcome)
        var metadata: Logger.Metadata = [
            "outcome": "\(outcome.label)", "type": "\(event.type.label)", "sub": "\(event.subject)",
            "event_time_ms": .stringConvertible(event.eventTimeMilliseconds),
        ]
        if settings.logEmails, let email = event.email { metadata["email"] = "\(email)" }
        request.logger.info("apple notification", metadata: metadata)
        completion(AuthPages.json(status, .object([:])))
    }

    private func refuse(_ reason: String) {
        metrics.recordNotification(.invalid)
        request.logger.warning("apple notification refused", metadata: [
            "reason": "\(reason)", "status": .stringConvertible(400),
        ])
        completion(AuthPages.json(400, .object(["error": .string("invalid_notification")])))
    }

    private func unavailable(_ reason: String, error: StoreError? = nil) {
        metrics.recordNotification(.unavailable)
        var metadata: Logger.Metadata = ["reason": "\(reason)", "status": .stringConvertible(503)]
        if let error { metadata["error"] = "\(error)" }
        request.logger.error("apple notification not processed; Apple will retry", metadata: metadata)
        completion(AuthPages.json(503, .object(["error": .string(reason)])))
    }
}

/// `sidecar_apple_notifications_total{outcome}`.
enum NotificationOutcome: Int, CaseIterable {
    case revoked = 0, acknowledged, duplicate, invalid, unavailable

    var label: String {
        switch self {
        case .revoked: "revoked"
        case .acknowledged: "acknowledged"
        case .duplicate: "duplicate"
        case .invalid: "invalid"
        case .unavailable: "unavailable"
        }
    }
}

extension AppleNotification.EventType {
    /// The name forwarded and logged (`account-deleted` for both of Apple's spellings).
    var label: String {
        switch self {
        case .emailDisabled: "email-disabled"
        case .emailEnabled: "email-enabled"
        case .consentRevoked: "consent-revoked"
        case .accountDeleted: "account-deleted"
        case .unknown(let name): name
        }
    }
}
