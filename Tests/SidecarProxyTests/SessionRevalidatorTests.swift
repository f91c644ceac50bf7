import Logging
import SidecarCrypto
import SidecarEvent
import SidecarStore
import XCTest

@testable import SidecarProxy

/// `session.revalidate` on its own: when a session is due, what the process-wide table says
/// about it, and what one check that Apple cannot answer leaves behind. The check runs on a
/// real loop against an Apple address nothing listens on.
final class SessionRevalidatorTests: XCTestCase {
    private struct Parts {
        let loop: EventLoop
        let metrics: MetricsRecorder
        let apple: AppleCalls
        let revalidator: SessionRevalidator
        let settings: AuthSettings
    }

    private let hour: Int64 = 3_600

    private func makeParts(revalidate: String = "1h") throws -> Parts {
        let config = try AuthTestConfig.parse(
            secret: Base64.encode([UInt8](repeating: 0x11, count: 32)), apple: ["base_url: http://127.0.0.1:1"],
            session: ["revalidate: \(revalidate)"])
        let settings = try AuthSettings(config: config, shared: AuthShared())
        let loop = try EventLoop()
        let metrics = AuthTestConfig.metrics(loop)
        let logger = Logger(label: "test")
        let apple = try AppleCalls(loop: loop, settings: settings, upstreamTimeoutMs: 2_000, metrics: metrics, logger: logger)
        return Parts(
            loop: loop, metrics: metrics, apple: apple,
            revalidator: SessionRevalidator(settings: settings, apple: apple, metrics: metrics, logger: logger),
            settings: settings)
    }

    private func session(lastRevalidation: Int64, refreshToken: String? = "r.token", id: UInt8 = 7) -> Session {
        Session(
            id: [UInt8](repeating: id, count: 16), subject: "001234.abcdef", email: nil, emailVerified: false,
            privateEmail: false, name: nil, issuedAt: lastRevalidation, expiresAt: lastRevalidation + 30 * 86_400,
            idleDeadline: lastRevalidation + 86_400, lastRevalidation: lastRevalidation, appleRefreshToken: refreshToken)
    }

    private func opened(_ session: Session, _ parts: Parts) throws -> OpenedSession {
        try XCTUnwrap(OpenedSession.make(
            token: Array("t".utf8), session: session, needsReseal: false, names: parts.settings.headers,
            revalidate: parts.settings.revalidateSeconds))
    }

    func testOffOrWithoutARefreshTokenASessionIsNeverDueAgain() throws {
        let off = try makeParts(revalidate: "0")
        defer { off.apple.stop() }
        let now = UnixTime.now()
        let stale = try opened(session(lastRevalidation: now - 10 * hour), off)
        XCTAssertFalse(off.revalidator.isRevalidationDue(stale.session, now: now))
        XCTAssertNil(off.revalidator.revalidate(stale, now: now))
        XCTAssertEqual(stale.nextRevalidation, .max)

        let on = try makeParts()
        defer { on.apple.stop() }
        let tokenless = try opened(session(lastRevalidation: now - 10 * hour, refreshToken: nil), on)
        XCTAssertFalse(on.revalidator.isRevalidationDue(tokenless.session, now: now))
        XCTAssertNil(on.revalidator.revalidate(tokenless, now: now))
        XCTAssertEqual(tokenless.nextRevalidation, .max)
        XCTAssertEqual(on.settings.shared.revalidations.count, 0, "nothing asked of the table")
    }

    func testAConfirmationRecordedElsewhereIsHandedBackForTheTokensThatLackIt() throws {
        let parts = try makeParts()
        defer { parts.apple.stop() }
        let now = UnixTime.now()
        let old = session(lastRevalidation: now - 2 * hour)
        XCTAssertTrue(parts.revalidator.isRevalidationDue(old, now: now))
        XCTAssertFalse(parts.revalidator.isRevalidationDue(session(lastRevalidation: now - hour + 1), now: now))
        parts.settings.shared.revalidations.finish(Key128(old.id), .confirmed(at: now - 60))
        XCTAssertEqual(parts.revalidator.revalidate(try opened(old, parts), now: now), now - 60, "to be re-sealed")
        // A token that already carries it waits a period from its own confirmation.
        let carried = try opened(session(lastRevalidation: now - 60), parts)
        XCTAssertNil(parts.revalidator.revalidate(carried, now: now))
        XCTAssertEqual(carried.nextRevalidation, now - 60 + hour)
    }

    func testADueSessionStartsOneCheckAndAnUnreachableAppleKeepsItForFiveMinutes() throws {
        let parts = try makeParts()
        defer { parts.apple.stop() }
        let now = UnixTime.now()
        let due = session(lastRevalidation: now - 2 * hour)
        let first = try opened(due, parts)
        XCTAssertNil(parts.revalidator.revalidate(first, now: now))
        XCTAssertEqual(first.nextRevalidation, now + RevalidationTable.inFlightSeconds)
        // The same session on another request (another worker's cache entry): one check only.
        let second = try opened(due, parts)
        XCTAssertNil(parts.revalidator.revalidate(second, now: now))
        XCTAssertEqual(second.nextRevalidation, now + 1)

        let total = { parts.metrics.metrics.revalidations.reduce(0, +) }
        var check: SidecarEvent.Timer?
        check = SidecarEvent.Timer(loop: parts.loop) {
            if total() > 0 { parts.loop.stop() } else { check?.schedule(afterMilliseconds: 5) }
        }
        let guardTimer = SidecarEvent.Timer(loop: parts.loop) { XCTFail("Apple's refusal never came"); parts.loop.stop() }
        guardTimer.schedule(afterMilliseconds: 10_000)
        check?.schedule(afterMilliseconds: 5)
        parts.loop.run()
        guardTimer.cancel()
        check?.cancel()
        check = nil

        XCTAssertEqual(total(), 1)
        XCTAssertEqual(parts.metrics.metrics.revalidations[RevalidationOutcome.keptUnreachable.rawValue], 1)
        XCTAssertEqual(first.nextRevalidation, 0, "the next request of this token looks at the outcome")
        XCTAssertNil(parts.revalidator.revalidate(first, now: now))
        XCTAssertGreaterThanOrEqual(first.nextRevalidation, now + RevalidationTable.retrySeconds, "kept; retried later")
        XCTAssertLessThanOrEqual(first.nextRevalidation, UnixTime.now() + RevalidationTable.retrySeconds)
    }
}
