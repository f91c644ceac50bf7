import Glibc
import SidecarConfig
import XCTest

/// What an operator reads when a file is missing or a value is wrong: where a relative path
/// resolved, examples that agree with each other.
final class OperatorMessageTests: XCTestCase {
    func testAMissingFileGivenRelativeNamesWhereItResolved() throws {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let cwd = String(cString: try XCTUnwrap(getcwd(&buffer, buffer.count)))
        XCTAssertThrowsError(try Config.load(file: "no-such-dir/sidecar.yaml", environment: [:])) { error in
            XCTAssertEqual((error as? ConfigErrors)?.errors.first?.message,
                           "cannot read \"no-such-dir/sidecar.yaml\" (\(cwd)/no-such-dir/sidecar.yaml): No such file or directory")
        }
    }

    func testEveryUpstreamRefusalShowsTheSameForms() throws {
        let forms = "(use http://host:port[/base], e.g. http://127.0.0.1:3000, https://host:port[/base], "
            + "or unix:/path, e.g. unix:/run/app.sock)"
        for (value, start) in [("ftp://x", #"invalid upstream scheme "ftp" "#),
                               ("wss://app:3000", #"invalid upstream scheme "wss" "#),
                               ("http://", "invalid upstream: ")] {
            let yaml = Fixture.minimal.replacingOccurrences(of: "upstream: http://127.0.0.1:3000", with: "upstream: \"\(value)\"")
            let errors = try errors(yaml)
            let message = try XCTUnwrap(errors.first?.message, value)
            XCTAssertTrue(message.hasPrefix(start), message)
            XCTAssertTrue(message.hasSuffix(forms), message)
        }
    }
}
