import XCTest
import SidecarConfig

/// `limits.sign_in_rate`, `limits.sign_in_burst` and `revocations.max_single_use_keys`.
final class SignInLimitConfigTests: XCTestCase {
    func testDefaults() throws {
        let config = try parse(Fixture.minimal)
        XCTAssertEqual(config.limits.signInRate, SignInRate(count: 20, periodSeconds: 1, burst: 100))
        XCTAssertEqual(config.limits.signInRate.intervalMicroseconds, 50_000)
        XCTAssertEqual(config.limits.signInRate.description, "20/s, burst 100")
        XCTAssertNil(config.revocations.maxSingleUseKeys)
    }

    func testRatesPerSecondMinuteAndHour() throws {
        for (text, count, period, interval) in [("5/s", 5, 1, 200_000), ("600/m", 600, 60, 100_000), ("30/h", 30, 3_600, 120_000_000)] {
            let config = try parse(minimal(plus: "limits:\n  sign_in_rate: \(text)\n  sign_in_burst: 7\n"))
            XCTAssertEqual(config.limits.signInRate, SignInRate(count: count, periodSeconds: period, burst: 7), text)
            XCTAssertEqual(config.limits.signInRate.intervalMicroseconds, Int64(interval), text)
        }
    }

    func testZeroDisables() throws {
        let config = try parse(minimal(plus: "limits:\n  sign_in_rate: 0\n"))
        XCTAssertFalse(config.limits.signInRate.isEnabled)
        XCTAssertEqual(config.limits.signInRate.description, "off")
    }

    func testInvalidRatesNameKeyLineAndColumn() throws {
        for text in ["20", "20/d", "20 /s", "/s", "-1/s", "0/s", "2000000/s", "twenty/s"] {
            let found = try errors(minimal(plus: "limits:\n  sign_in_rate: \(text)\n"))
            XCTAssertEqual(found.count, 1, "\(text): \(found)")
            XCTAssertEqual(found.first?.path, "limits.sign_in_rate", text)
            XCTAssertEqual(found.first?.line, 12, text)
            XCTAssertEqual(found.first?.column, 17, text)
        }
        let error = try XCTUnwrap(try errors(minimal(plus: "limits:\n  sign_in_rate: 20/d\n")).first)
        XCTAssertEqual(error.description,
                       #"sidecar.yaml:12:17: limits.sign_in_rate: invalid rate "20/d" (use e.g. 20/s, 600/m, 1000/h, or 0 to disable)"#)
    }

    func testTheBurstIsAtLeastOne() throws {
        let error = try XCTUnwrap(try errors(minimal(plus: "limits:\n  sign_in_burst: 0\n")).first)
        XCTAssertEqual(error.path, "limits.sign_in_burst")
        XCTAssertEqual(error.line, 12)
    }

    func testMaxSingleUseKeys() throws {
        let config = try parse(minimal(plus: "revocations:\n  max_single_use_keys: 5000\n"))
        XCTAssertEqual(config.revocations.maxSingleUseKeys, 5_000)
        XCTAssertEqual(try errors(minimal(plus: "revocations:\n  max_single_use_keys: 2\n")).first?.path,
                       "revocations.max_single_use_keys")
        let redis = try parse(minimal(plus: "revocations:\n  store: redis://127.0.0.1:6379/0\n  max_single_use_keys: 5000\n"))
        XCTAssertEqual(redis.warnings.map(\.path), ["revocations.max_single_use_keys"])
    }
}
