import XCTest
import SidecarConfig
import SidecarRESP
import SidecarStore

/// `revocations.store: redis+sentinel://…` and `revocations.sentinel_password`.
final class SentinelStoreTests: XCTestCase {
    private func store(_ url: String) throws -> RevocationStore {
        try parse(minimal(plus: "revocations:\n  store: \"\(url)\"\n")).revocations.store
    }

    private func error(_ url: String) throws -> ConfigError? {
        try errors(minimal(plus: "revocations:\n  store: \"\(url)\"\n")).first
    }

    func testSentinelURLsName_theSentinels_theMaster_andTheDatabase() throws {
        XCTAssertEqual(try store("redis+sentinel://s1:26380,s2,10.0.0.3:26381/mymaster/2"),
                       .redis(RedisAddress(location: .sentinels([.init(host: "s1", port: 26380), .init(host: "s2", port: 26379),
                                                                 .init(host: "10.0.0.3", port: 26381)], masterName: "mymaster"),
                                           database: 2)))
        XCTAssertEqual(try store("redis+sentinel://s1/cache-main"),
                       .redis(RedisAddress(location: .sentinels([.init(host: "s1", port: 26379)], masterName: "cache-main"))))
        XCTAssertEqual(try store("rediss+sentinel://[::1]:26379,S2.Internal:26379/m_1.a/"),
                       .redis(RedisAddress(location: .sentinels([.init(host: "::1", port: 26379), .init(host: "s2.internal", port: 26379)],
                                                                masterName: "m_1.a"), database: 0, tls: true)))
        XCTAssertEqual(try store("redis+sentinel://s1:26380,s2/mymaster/2").description,
                       "redis+sentinel://s1:26380,s2:26379/mymaster/2")
        XCTAssertEqual(try store("rediss+sentinel://[::1]/m").description, "rediss+sentinel://[::1]:26379/m/0")
    }

    func testMalformedSentinelURLsSayWhatIsExpected() throws {
        let usage = #"(redis+sentinel://host[:port][,host[:port]…]/master[/db])"#
        for url in ["redis+sentinel://s1:26379", "redis+sentinel://s1:26379/", "redis+sentinel:///m",
                    "redis+sentinel://s1,,s2/m", "redis+sentinel://s1:0/m", "redis+sentinel://s1:70000/m",
                    "redis+sentinel://s1/m/x", "redis+sentinel://s1/m/0/extra", "redis+sentinel://bad host/m"] {
            let message = try XCTUnwrap(error(url)?.message, url)
            if url.hasSuffix("s1:26379/") {
                XCTAssertTrue(message.hasPrefix("invalid sentinel master name \"\""), message)
            } else {
                XCTAssertEqual(message, "invalid redis sentinel address \"\(url)\" \(usage)", url)
            }
        }
        XCTAssertEqual(try error("rediss+sentinel://s1/m/x")?.message,
                       #"invalid redis sentinel address "rediss+sentinel://s1/m/x" (rediss+sentinel://host[:port][,host[:port]…]/master[/db])"#)
        XCTAssertEqual(try error("redis+sentinel://s1/my master")?.message,
                       #"invalid sentinel master name "my master" in "redis+sentinel://s1/my master" (1 to 64 letters, digits, '.', '_' or '-')"#)
        XCTAssertEqual(try error("redis+sentinel://s1:26379,s1/m")?.message,
                       #"sentinel s1:26379 is listed twice in "redis+sentinel://s1:26379,s1/m""#)
        let many = (1...17).map { "s\($0)" }.joined(separator: ",")
        XCTAssertEqual(try error("redis+sentinel://\(many)/m")?.message, #"more than 16 sentinels in "redis+sentinel://\#(many)/m""#)
    }

    func testCredentialsInTheURLAreRefusedWithTheKeysToUseInstead() throws {
        XCTAssertEqual(try error("redis+sentinel://:pw@s1/m")?.message,
                       "redis address must not carry credentials; set revocations.password (the Redis servers) and "
                           + "revocations.sentinel_password (the sentinels), each env:NAME or file:/path")
    }

    func testErrorsNameTheFileKeyLineAndColumn() throws {
        let found = try errors(minimal(plus: "revocations:\n  store: redis+sentinel://s1/\n"))
        XCTAssertEqual(found.count, 1, "\(found)")
        let error = try XCTUnwrap(found.first)
        XCTAssertEqual(error.path, "revocations.store")
        XCTAssertEqual(error.line, 12)
        XCTAssertEqual(error.column, 10)
        XCTAssertTrue(error.description.hasPrefix("sidecar.yaml:12:10: revocations.store: invalid sentinel master name"),
                      error.description)
    }

    func testTheSentinelsHaveTheirOwnPassword() throws {
        let config = try parse(
            minimal(plus: "revocations:\n  store: redis+sentinel://s1,s2,s3/mymaster\n  password: env:REDIS_PW\n"
                + "  sentinel_password: env:SENTINEL_PW\n"),
            environment: Fixture.environment.merging(["REDIS_PW": "data-pw", "SENTINEL_PW": "sentinel-pw"]) { $1 })
        XCTAssertEqual(config.revocations.password?.string, "data-pw")
        XCTAssertEqual(config.revocations.sentinelPassword?.string, "sentinel-pw")
        XCTAssertEqual(config.warnings.map(\.path), [])
        let empty = try errors(
            minimal(plus: "revocations:\n  store: redis+sentinel://s1/m\n  sentinel_password: env:EMPTY\n"),
            environment: Fixture.environment.merging(["EMPTY": ""]) { $1 })
        XCTAssertEqual(empty.first?.path, "revocations.sentinel_password")
    }

    func testSentinelOnlyAndTLSOnlyKeysWarnWhereTheyDoNotApply() throws {
        let direct = try parse(minimal(plus: "revocations:\n  store: redis://cache\n  sentinel_password: env:PW\n"),
                               environment: Fixture.environment.merging(["PW": "x"]) { $1 })
        XCTAssertEqual(direct.warnings.map(\.path), ["revocations.sentinel_password"])
        XCTAssertTrue(direct.warnings[0].message.contains("redis+sentinel://"), direct.warnings[0].message)
        let inline = try parse(minimal(plus: "revocations:\n  store: redis+sentinel://s1/m\n  sentinel_password: hunter2\n"))
        XCTAssertEqual(inline.warnings.map(\.path), ["revocations.sentinel_password"])
        XCTAssertTrue(inline.warnings[0].message.contains("inline"))
        XCTAssertFalse(inline.warnings[0].message.contains("hunter2"))
        let directory = try Fixture.directory(self)
        let ca = directory + "/ca.pem"
        _ = FileManager.default.createFile(atPath: ca, contents: Data("x".utf8))
        let plain = try parse(minimal(plus: "revocations:\n  store: redis+sentinel://s1/m\n  ca_file: \(ca)\n"))
        XCTAssertEqual(plain.warnings.map(\.path), ["revocations.ca_file"])
        let tls = try parse(minimal(plus: "revocations:\n  store: rediss+sentinel://s1/m\n  ca_file: \(ca)\n"))
        XCTAssertEqual(tls.warnings.map(\.path), [])
    }
}
