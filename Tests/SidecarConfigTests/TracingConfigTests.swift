import Foundation
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

    func testAnHTTPSEndpointIsAcceptedWithAnOptionalCAFile() throws {
        let tracing = try parse(minimal(plus: "tracing:\n  otlp_endpoint: https://collector.example:4318\n")).tracing
        XCTAssertEqual(tracing.otlpEndpoint?.description, "https://collector.example:4318/v1/traces")
        XCTAssertEqual(tracing.otlpEndpoint?.isHTTPS, true)
        XCTAssertNil(tracing.otlpCAFile, "the system trust store unless a CA file is named")
        let defaultPort = try parse(minimal(plus: "tracing:\n  otlp_endpoint: https://collector.example\n")).tracing
        XCTAssertEqual(defaultPort.otlpEndpoint?.port, 443)

        let directory = try Fixture.directory(self)
        let ca = directory + "/collector-ca.pem"
        _ = FileManager.default.createFile(atPath: ca, contents: Data("x".utf8))
        let config = try parse(minimal(plus: "tracing:\n  otlp_endpoint: https://collector:4318\n  otlp_ca_file: \(ca)\n"))
        XCTAssertEqual(config.tracing.otlpCAFile, ca)
        XCTAssertEqual(config.warnings.map(\.path), [])
        let relative = try parse(minimal(plus: "tracing:\n  otlp_endpoint: https://collector:4318\n  otlp_ca_file: AuthKey.p8\n"))
        XCTAssertTrue(relative.tracing.otlpCAFile?.hasSuffix("/AuthKey.p8") ?? false, "relative to the config's directory")
        XCTAssertTrue(relative.tracing.otlpCAFile?.hasPrefix("/") ?? false)
    }

    func testACAFileWithoutAnHTTPSEndpointIsAWarning() throws {
        let directory = try Fixture.directory(self)
        let ca = directory + "/collector-ca.pem"
        _ = FileManager.default.createFile(atPath: ca, contents: Data("x".utf8))
        let plain = try parse(minimal(plus: "tracing:\n  otlp_endpoint: http://collector:4318\n  otlp_ca_file: \(ca)\n"))
        XCTAssertEqual(plain.warnings.map(\.path), ["tracing.otlp_ca_file"])
        XCTAssertTrue(plain.warnings[0].message.contains("https://"), plain.warnings[0].message)
        let none = try parse(minimal(plus: "tracing:\n  otlp_ca_file: \(ca)\n"))
        XCTAssertEqual(none.warnings.map(\.path), ["tracing.otlp_ca_file"])
    }

    func testAMissingCAFileNamesKeyLineAndColumn() throws {
        let error = try XCTUnwrap(try errors(minimal(plus: "tracing:\n  otlp_endpoint: https://collector:4318\n  otlp_ca_file: /nonexistent/ca.pem\n")).first)
        XCTAssertEqual(error.kind, .unresolvable)
        XCTAssertEqual(error.path, "tracing.otlp_ca_file")
        XCTAssertEqual(error.line, 13)
        XCTAssertEqual(error.column, 17)
        XCTAssertTrue(error.description.hasPrefix("sidecar.yaml:13:17: tracing.otlp_ca_file: "), error.description)
        XCTAssertTrue(error.description.contains("/nonexistent/ca.pem"), error.description)
    }

    func testABadEndpointNamesKeyLineAndColumn() throws {
        let ftp = try XCTUnwrap(try errors(minimal(plus: "tracing:\n  otlp_endpoint: ftp://collector:4318\n")).first)
        XCTAssertEqual(ftp.kind, .invalidValue)
        XCTAssertEqual(ftp.path, "tracing.otlp_endpoint")
        XCTAssertEqual(ftp.line, 12)
        XCTAssertEqual(ftp.column, 18)
        XCTAssertTrue(ftp.description.hasPrefix(#"sidecar.yaml:12:18: tracing.otlp_endpoint: "ftp://collector:4318" must use http or https"#),
                      ftp.description)
        for bad in ["collector:4318", "http://collector:4318/v1/traces?x=1", "https://collector:4318/?x=1", "ftp://collector",
                    "http://collector:0", "https://"] {
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
