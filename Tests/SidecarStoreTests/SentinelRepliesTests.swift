import SidecarConfig
@testable import SidecarStore
import SidecarRESP
import XCTest

/// What the sentinels and the data nodes answer about the master, as the store reads it.
final class SentinelRepliesTests: XCTestCase {
    private func bulk(_ text: String) -> RESPValue { .bulk(Array(text.utf8)) }

    func testAMasterAddressIsAnIPOrNameAndAPort() {
        XCTAssertEqual(SentinelReplies.masterAddress(.array([bulk("10.0.0.7"), bulk("6380")])),
                       .master(.init(host: "10.0.0.7", port: 6380)))
        XCTAssertEqual(SentinelReplies.masterAddress(.array([bulk("redis-1.internal"), bulk("6379")])),
                       .master(.init(host: "redis-1.internal", port: 6379)))
        XCTAssertEqual(SentinelReplies.masterAddress(.array([bulk("::1"), bulk("6379")])), .master(.init(host: "::1", port: 6379)))
        XCTAssertEqual(SentinelReplies.MasterAddress(host: "::1", port: 6379).description, "[::1]:6379")
    }

    func testAnUnknownMasterNameIsANullReply() {
        XCTAssertEqual(SentinelReplies.masterAddress(.array(nil)), .unknownMaster)
        XCTAssertEqual(SentinelReplies.masterAddress(.bulk(nil)), .unknownMaster)
    }

    func testErrorsAndMalformedAddressesAreRefused() {
        XCTAssertEqual(SentinelReplies.masterAddress(.error("NOAUTH Authentication required.")),
                       .refused("NOAUTH Authentication required."))
        for reply: RESPValue in [
            .array([bulk("10.0.0.7")]), .array([bulk("10.0.0.7"), bulk("0")]), .array([bulk("10.0.0.7"), bulk("65536")]),
            .array([bulk("10.0.0.7"), bulk("-1")]), .array([bulk(""), bulk("6379")]), .array([bulk("a b"), bulk("6379")]),
            .array([bulk("a\r\nb"), bulk("6379")]), .array([.integer(1), bulk("6379")]), .integer(3), .simple("OK"),
        ] {
            guard case .refused = SentinelReplies.masterAddress(reply) else { return XCTFail("accepted \(reply)") }
        }
    }

    func testASwitchMasterMessageNamesTheMasterAndBothAddresses() throws {
        let change = try XCTUnwrap(SentinelReplies.switchMaster(Array("mymaster 127.0.0.1 6380 127.0.0.1 6381".utf8)))
        XCTAssertEqual(change.name, "mymaster")
        XCTAssertEqual(change.old, .init(host: "127.0.0.1", port: 6380))
        XCTAssertEqual(change.new, .init(host: "127.0.0.1", port: 6381))
        for payload in ["mymaster 127.0.0.1 6380 127.0.0.1", "mymaster 127.0.0.1 6380 127.0.0.1 x", "",
                        "mymaster 127.0.0.1 6380 127.0.0.1 6381 extra", "m a\u{7F} 1 b 2"] {
            XCTAssertNil(SentinelReplies.switchMaster(Array(payload.utf8)), payload)
        }
    }

    func testOnlyAMasterPassesTheRoleCheck() {
        XCTAssertNil(SentinelReplies.roleRefusal(.array([bulk("master"), .integer(3129), .array([])])))
        XCTAssertEqual(SentinelReplies.roleRefusal(.array([bulk("slave"), bulk("127.0.0.1"), .integer(6380),
                                                           bulk("connected"), .integer(3167)])),
                       "is a replica (ROLE slave), not the master")
        XCTAssertEqual(SentinelReplies.roleRefusal(.array([bulk("sentinel"), .array([bulk("mymaster")])])),
                       "is a sentinel (ROLE sentinel), not the master")
        XCTAssertEqual(SentinelReplies.roleRefusal(.error("ERR unknown command")), "did not answer ROLE with a role")
        XCTAssertEqual(SentinelReplies.roleRefusal(.array([])), "did not answer ROLE with a role")
    }

    func testTheEndpointDescribesTheSentinelsAndTheMasterWithoutThePasswords() {
        let endpoint = RedisEndpoint(
            address: RedisAddress(location: .sentinels([.init(host: "s1", port: 26379), .init(host: "::1", port: 26380)],
                                                       masterName: "mymaster"), database: 3, tls: true),
            password: Array("data-pw".utf8), sentinelPassword: Array("sentinel-pw".utf8))
        XCTAssertEqual(endpoint.description, "rediss+sentinel://s1:26379,[::1]:26380/mymaster/3")
        XCTAssertEqual(RedisEndpoint(address: RedisAddress(host: "cache", port: 6379)).description, "redis://cache:6379/0")
        XCTAssertEqual(endpoint.sentinels?.masterName, "mymaster")
    }
}
