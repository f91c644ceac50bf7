import XCTest
import SidecarConfig

/// `tracing.*`: the collector spans are posted to and the share of new traces sampled.
final class TracingConfigTests: XCTestCase {
    func testDefaultsRecordNothingAndSampleEveryNewTrace() throws {
        let tracing = try parse(minimal(plus: "")).tracing
        XCTAssertNil(tracing.otlpEndpoint)
        XCTAssertEqual(tracing.sampleRatio, 1.0)
        XCTAssertTrue(tracing.trustIncoming)
    }

    func testAnEndpointWithoutAPathGetsTheTracesPath() throws {
        let tracing = try parse(minimal(plus: "tracing:\n  otlp_endpoint: http://collector:4318\n  sample_ratio: 0.25\n")).tracing
        XCTAssertEqual(tracing.otlpEndpoint?.description, "http://collector:4318/v1/traces")
        XCTAssertEqual(tracing.otlpEndpoint?.path, "/v1/traces")
        XCTAssertEqual(tracing.sampleRatio, 0.25)
        let custom = try parse(minimal(plus: "tracing:\n  otlp_endpoint: http://127.0.0.1:4318/otel/v1/traces/\n")).tracing
        XCTAssertEqual(custom.otlpEndpoint?.path, "/otel/v1/traces")
        XCTAssertEqual(try parse(minimal(plus: "tracing:\n  sample_ratio: 0\n")).tracing.sampleRatio, 0)
    }

    func testABadEndpointNamesKeyLineAndColumn() throws {
        let https = try XCTUnwrap(try errors(minimal(plus: "tracing:\n  otlp_endpoint: https://collector:4318\n")).first)
        XCTAssertEqual(https.kind, .invalidValue)
        XCTAssertEqual(https.path, "tracing.otlp_endpoint")
        XCTAssertEqual(https.line, 12)
        XCTAssertEqual(https.column, 18)
        XCTAssertTrue(https.description.hasPrefix(#"sidecar.yaml:12:18: tracing.otlp_endpoint: "https://collector:4318" must use http"#),
                      https.description)
        for bad in ["collector:4318", "http://collector:4318/v1/traces?x=1", "ftp://collector", "http://collector:0"] {
            let error = try XCTUnwrap(try errors(minimal(plus: "tracing:\n  otlp_endpoint: \(bad)\n")).first, bad)
            XCTAssertEqual(error.path, "tracing.otlp_endpoint", bad)
            XCTAssertEqual(error.line, 12, bad)
        }
    }

    func testARatioOutsideZeroToOneNamesKeyLineAndColumn() throws {
        for (bad, message) in [("1.5", "1.5 is out of range (0.0–1.0)"), ("-0.1", "-0.1 is out of range (0.0–1.0)"),
                               ("half", #"expected a number from 0.0 to 1.0, found "half""#),
                               ("nan", #"expected a number from 0.0 to 1.0, found "nan""#)] {
            let errors = try errors(minimal(plus: "tracing:\n  sample_ratio: \(bad)\n"))
            XCTAssertEqual(errors.count, 1, bad)
            let error = try XCTUnwrap(errors.first)
            XCTAssertEqual(error.path, "tracing.sample_ratio")
            XCTAssertEqual(error.line, 12)
            XCTAssertEqual(error.column, 17)
            XCTAssertEqual(error.message, message)
        }
    }
}
