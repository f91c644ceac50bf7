import SidecarConfig
import XCTest

@testable import SidecarProxy

/// `trusted_proxies` is parsed once, by the configuration: every block that loads is one the
/// proxy trusts, none dropped on the way.
final class TrustedProxiesTests: XCTestCase {
    private static let secret = "MzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzM="

    /// Each block with an address inside it and one just outside.
    private static let blocks: [(block: String, inside: [UInt8], outside: [UInt8])] = [
        ("10.0.0.0/8", [10, 1, 2, 3], [11, 0, 0, 1]),
        ("192.168.1.7", [192, 168, 1, 7], [192, 168, 1, 8]),
        ("172.16.0.0/12", [172, 31, 255, 255], [172, 32, 0, 0]),
        ("0.0.0.0/32", [0, 0, 0, 0], [0, 0, 0, 1]),
        ("fd00::/8", [0xfd] + [UInt8](repeating: 0, count: 14) + [1], [0xfe] + [UInt8](repeating: 0, count: 15)),
        ("::1/128", [UInt8](repeating: 0, count: 15) + [1], [UInt8](repeating: 0, count: 15) + [2]),
        ("2001:db8:0:0:0:0:0:0/32", [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 7, count: 12),
         [0x20, 0x01, 0x0d, 0xb9] + [UInt8](repeating: 0, count: 12)),
    ]

    private func rewriter(trusting blocks: [String]) throws -> (Config, RequestRewriter) {
        let list = blocks.map { "\"\($0)\"" }.joined(separator: ", ")
        let config = try AuthTestConfig.parse(secret: Self.secret, extra: "trusted_proxies: [\(list)]\n")
        return (config, RequestRewriter(options: ProxyOptions(config: config)))
    }

    func testEveryBlockTheConfigurationLoadsIsTrusted() throws {
        let (config, rewriter) = try rewriter(trusting: Self.blocks.map(\.block))
        XCTAssertEqual(config.trustedProxies.count, Self.blocks.count)
        for (block, inside, outside) in Self.blocks {
            XCTAssertTrue(rewriter.isTrusted(address: inside), "\(block) loaded but \(inside) in it is not trusted")
            XCTAssertFalse(rewriter.isTrusted(address: outside), "\(outside) is outside \(block)")
        }
    }

    /// An IPv4 block trusts an IPv4 peer whose address reached the rewriter unmapped, never
    /// the same bytes read as the start of an IPv6 address.
    func testFamiliesDoNotMix() throws {
        let (_, rewriter) = try rewriter(trusting: ["10.0.0.0/8"])
        XCTAssertFalse(rewriter.isTrusted(address: [10] + [UInt8](repeating: 0, count: 15)))
        XCTAssertFalse(rewriter.isTrusted(address: [10, 0, 0]))
    }

    func testNoBlocksTrustNobody() throws {
        let (_, rewriter) = try rewriter(trusting: [])
        XCTAssertFalse(rewriter.isTrusted(address: [127, 0, 0, 1]))
    }
}
