import SidecarCrypto
import XCTest

@testable import SidecarProxy

final class MetricsTests: XCTestCase {
    func testLoginReasonsMapToAFixedSet() {
        XCTAssertEqual(LoginOutcome.labels[LoginOutcome.index(of: "ok")], "ok")
        XCTAssertEqual(LoginOutcome.labels[LoginOutcome.index(of: "state_mismatch")], "state_mismatch")
        XCTAssertEqual(LoginOutcome.labels[LoginOutcome.index(of: LoginFailure.token(.nonceMismatch).reason)],
                       "token_nonce_mismatch")
        XCTAssertEqual(LoginOutcome.labels[LoginOutcome.index(of: LoginFailure.policyDenied(.privateRelay).reason)],
                       "policy_denied_private_relay")
        // Apple's own error code is not trusted as a label value.
        let unknown = LoginFailure.exchange(.rejected(.init("made_up_by_apple"), description: nil, status: 400))
        XCTAssertEqual(LoginOutcome.index(of: unknown.reason), LoginOutcome.other)
        XCTAssertEqual(LoginOutcome.index(of: "x\"}\n"), LoginOutcome.other)
        XCTAssertEqual(Set(LoginOutcome.labels).count, LoginOutcome.labels.count)
    }

    func testEveryStaticLoginFailureHasItsOwnLabel() {
        let failures: [LoginFailure] = [
            .formInvalid, .stateMissing, .stateMismatch, .stateExpired, .stateInvalid, .stateReplayed, .codeMissing,
            .appleCancelled, .appleRefused, .noIDToken, .keysUnavailable, .subjectMismatch, .sessionTooLarge,
            .internalError, .exchange(.appleServerError(status: 503)), .exchange(.invalidResponse(status: 200)),
            .exchange(.rejected(.invalidGrant, description: nil, status: 400)),
        ]
        for failure in failures {
            XCTAssertNotEqual(LoginOutcome.index(of: failure.reason), LoginOutcome.other, failure.reason)
        }
    }

    func testSessionOutcomesUseSealedOpenErrorReasons() {
        let errors: [SealedOpenError] = [
            .malformed, .unsupportedVersion, .unknownKey, .authenticationFailed, .invalidPayload, .expired, .idleExpired,
        ]
        for error in errors { XCTAssertEqual(SessionOutcome(error).reason, error.reason) }
        XCTAssertEqual(SessionOutcome.revoked.result, "rejected")
        XCTAssertEqual(SessionOutcome.accepted.result, "accepted")
    }

    func testWorkersAreSummedAndRendered() {
        var a = WorkerMetrics(), b = WorkerMetrics()
        a.recordSession(.accepted, via: .cookie)
        b.recordSession(.accepted, via: .cookie)
        b.recordSession(.authenticationFailed, via: .bearer)
        a.logins[LoginOutcome.index(of: "ok")] += 1
        b.logins[LoginOutcome.index(of: "state_expired")] += 2
        a.appleLatency[AppleCall.token.rawValue].record(ms: 3)
        b.appleLatency[AppleCall.token.rawValue].record(ms: 20_000)
        let board = MetricsBoard(workers: 2)
        board.publish(a, worker: 0)
        board.publish(b, worker: 1)
        let lines = Set(board.render().split(separator: "\n").map(String.init))
        for expected in [
            "sidecar_sessions_total{via=\"cookie\",result=\"accepted\",reason=\"ok\"} 2",
            "sidecar_sessions_total{via=\"bearer\",result=\"rejected\",reason=\"authentication_failed\"} 1",
            "sidecar_logins_total{outcome=\"ok\"} 1",
            "sidecar_logins_total{outcome=\"state_expired\"} 2",
            "sidecar_apple_request_seconds_bucket{call=\"token\",le=\"0.005\"} 1",
            "sidecar_apple_request_seconds_bucket{call=\"token\",le=\"10.0\"} 1",
            "sidecar_apple_request_seconds_bucket{call=\"token\",le=\"+Inf\"} 2",
            "sidecar_apple_request_seconds_sum{call=\"token\"} 20.003",
            "sidecar_apple_request_seconds_count{call=\"token\"} 2",
            "# TYPE sidecar_logins_total counter",
        ] {
            XCTAssertTrue(lines.contains(expected), expected)
        }
        // Failure outcomes not seen are left out; "ok" is always there.
        XCTAssertFalse(lines.contains { $0.hasPrefix("sidecar_logins_total{outcome=\"state_mismatch\"}") })
    }

    func testReadinessNeedsEveryWorkersAppleKeys() {
        let readiness = Readiness(workers: 2)
        XCTAssertFalse(readiness.appleKeysReady, "workers still starting")
        readiness.report(.held, worker: 0)
        readiness.report(.missing, worker: 1)
        XCTAssertFalse(readiness.appleKeysReady)
        readiness.report(.held, worker: 1)
        XCTAssertTrue(readiness.appleKeysReady)
        readiness.report(.notNeeded, worker: 0)
        XCTAssertTrue(readiness.appleKeysReady)
    }
}
