import XCTest
@testable import SidecarConfig

/// Every class of error names the file, the key path, the line and the column.
final class ErrorLocationTests: XCTestCase {
    private func only(_ errors: [ConfigError], file: StaticString = #filePath, line: UInt = #line) throws -> ConfigError {
        XCTAssertEqual(errors.count, 1, "\(errors)", file: file, line: line)
        return try XCTUnwrap(errors.first, file: file, line: line)
    }

    func testInvalidValueNamesKeyLineAndColumn() throws {
        let error = try only(errors(minimal(plus: "limits:\n  header_timeout: 10x\n")))
        XCTAssertEqual(error.kind, .invalidValue)
        XCTAssertEqual(error.path, "limits.header_timeout")
        XCTAssertEqual(error.line, 12)
        XCTAssertEqual(error.column, 19)
        XCTAssertEqual(error.description,
                       #"sidecar.yaml:12:19: limits.header_timeout: invalid duration "10x" (use e.g. 90s, 15m, 24h, 7d)"#)
    }

    func testUnknownKeySuggestsClosestSibling() throws {
        let error = try only(errors(minimal(plus: "limits:\n  heder_timeout: 10s\n")))
        XCTAssertEqual(error.kind, .unknownKey)
        XCTAssertEqual(error.path, "limits.heder_timeout")
        XCTAssertEqual(error.line, 12)
        XCTAssertEqual(error.column, 3)
        XCTAssertEqual(error.message, #"unknown key "heder_timeout" (did you mean "header_timeout"?)"#)
    }

    func testUnknownKeyInWrongSectionSuggestsItsHome() throws {
        let error = try only(errors(minimal(plus: "header_timeout: 10s\n")))
        XCTAssertEqual(error.path, "header_timeout")
        XCTAssertEqual(error.line, 11)
        XCTAssertEqual(error.column, 1)
        XCTAssertEqual(error.message, #"unknown key "header_timeout" (did you mean "limits.header_timeout"?)"#)
    }

    func testUnknownKeyWithoutNeighbourHasNoSuggestion() throws {
        let error = try only(errors(minimal(plus: "session_store: redis\n")))
        XCTAssertEqual(error.message, #"unknown key "session_store""#)
    }

    func testUnknownTopLevelSectionIsReportedOnce() throws {
        let error = try only(errors(minimal(plus: "limit:\n  header_timeout: 10s\n  anything: 1\n")))
        XCTAssertEqual(error.path, "limit")
        XCTAssertEqual(error.message, #"unknown key "limit" (did you mean "limits"?)"#)
    }

    func testWrongTypeListWhereStringBelongs() throws {
        let error = try only(errors(minimal(plus: "log:\n  level: [info, debug]\n")))
        XCTAssertEqual(error.kind, .wrongType)
        XCTAssertEqual(error.path, "log.level")
        XCTAssertEqual(error.line, 12)
        XCTAssertEqual(error.column, 10)
        XCTAssertEqual(error.message, "expected a single value, found a list")
    }

    func testWrongTypeStringWhereListBelongs() throws {
        let error = try only(errors(minimal(plus: "trusted_proxies: 10.0.0.0/8\n")))
        XCTAssertEqual(error.kind, .wrongType)
        XCTAssertEqual(error.path, "trusted_proxies")
        XCTAssertEqual(error.line, 11)
        XCTAssertEqual(error.column, 18)
        XCTAssertEqual(error.message, #"expected a list, found "10.0.0.0/8""#)
    }

    func testProxyProtocolWithoutTrustedProxiesIsAnErrorAtTheKey() throws {
        let error = try only(errors(minimal(plus: "proxy_protocol: true\n")))
        XCTAssertEqual(error.kind, .invalidValue)
        XCTAssertEqual(error.path, "proxy_protocol")
        XCTAssertEqual(error.line, 11)
        XCTAssertEqual(error.column, 17)
        XCTAssertTrue(error.message.contains("no trusted_proxies"), error.message)
        let loaded = try Config.parse(yaml: minimal(plus: "proxy_protocol: true\ntrusted_proxies: [10.0.0.0/8]\n"),
                                      environment: Fixture.environment, baseDirectory: Fixture.directory(self))
        XCTAssertTrue(loaded.proxyProtocol)
    }

    func testProxyProtocolOnAUnixSocketListenerIsAnError() throws {
        let yaml = Fixture.minimal.replacingOccurrences(of: "listen: 0.0.0.0:8080\n", with: "listen: unix:/run/sidecar.sock\n")
            + "proxy_protocol: true\ntrusted_proxies: [10.0.0.0/8]\n"
        let error = try only(errors(yaml))
        XCTAssertEqual(error.path, "proxy_protocol")
        XCTAssertTrue(error.message.contains("unix socket"), error.message)
    }

    func testWrongTypeScalarWhereSectionBelongs() throws {
        let error = try only(errors(minimal(plus: "limits: 16KiB\n")))
        XCTAssertEqual(error.kind, .wrongType)
        XCTAssertEqual(error.path, "limits")
        XCTAssertEqual(error.line, 11)
        XCTAssertEqual(error.column, 9)
    }

    func testBadListItemNamesItsIndex() throws {
        let error = try only(errors(minimal(plus: "trusted_proxies:\n  - 10.0.0.0/8\n  - 10.0.0.300\n")))
        XCTAssertEqual(error.path, "trusted_proxies[1]")
        XCTAssertEqual(error.line, 13)
        XCTAssertEqual(error.column, 5)
    }

    func testMissingRequiredKeyPointsAtItsSection() throws {
        let yaml = Fixture.minimal.replacingOccurrences(of: "  key_id: XYZ123ABCD\n", with: "")
        let error = try only(errors(yaml))
        XCTAssertEqual(error.kind, .missingKey)
        XCTAssertEqual(error.path, "apple.key_id")
        XCTAssertEqual(error.line, 5)
        XCTAssertEqual(error.column, 3)
        XCTAssertEqual(error.message, #"missing required key "key_id""#)
    }

    func testMissingTopLevelKeys() throws {
        let all = try errors("listen: 127.0.0.1:8080\n")
        XCTAssertEqual(all.filter { $0.kind == .missingKey }.map(\.path),
                       ["public_url", "upstream", "apple.team_id", "apple.client_id", "apple.key_id",
                        "apple.private_key_file", "session.secrets"])
        XCTAssertTrue(all.allSatisfy { $0.line == 1 && $0.column == 1 })
    }

    func testEmptyFileReportsMissingKeys() throws {
        let all = try errors("")
        XCTAssertEqual(all.count, 7)
        XCTAssertTrue(all.allSatisfy { $0.kind == .missingKey })
    }

    func testDuplicateKeyNamesTheSecondOccurrence() throws {
        let error = try only(errors(minimal(plus: "limits:\n  header_timeout: 10s\n  idle_timeout: 1m\n  header_timeout: 20s\n")))
        XCTAssertEqual(error.kind, .duplicateKey)
        XCTAssertEqual(error.path, "limits.header_timeout")
        XCTAssertEqual(error.line, 14)
        XCTAssertEqual(error.column, 3)
        XCTAssertEqual(error.message, #"duplicate key "header_timeout" (first set at line 12)"#)
    }

    func testDuplicateKeysAtSeveralLevelsAreAllReported() throws {
        let all = try errors(minimal(plus: "workers: 2\nlog: {level: info, level: debug}\nworkers: 3\n"))
        XCTAssertEqual(all.map(\.path), ["log.level", "workers"])
        XCTAssertEqual(all.map(\.line), [12, 13])
        XCTAssertEqual(all.map(\.column), [20, 1])
        XCTAssertTrue(all.allSatisfy { $0.kind == .duplicateKey })
    }

    func testInvalidYAMLHasPosition() throws {
        let error = try only(errors("listen: 127.0.0.1:8080\nupstream: [unclosed\n"))
        XCTAssertEqual(error.kind, .invalidYAML)
        XCTAssertEqual(error.path, "")
        XCTAssertEqual(error.line, 3)
        XCTAssertTrue(error.description.hasPrefix("sidecar.yaml:3:"), error.description)
    }

    func testTabIndentationIsInvalidYAML() throws {
        let error = try only(errors("limits:\n\theader_timeout: 10s\n"))
        XCTAssertEqual(error.kind, .invalidYAML)
        XCTAssertEqual(error.line, 2)
    }

    func testMisindentedKeyNamesTheLinesAndHowToNest() throws {
        let error = try only(errors("session:\n  cookie_name: s\n    domain: example.com\nsecrets: [\"x:y\"]\n"))
        XCTAssertEqual(error.kind, .invalidYAML)
        XCTAssertEqual(error.line, 3)
        XCTAssertTrue(error.message.contains("line 3 `domain:` indented 4 after line 2 `cookie_name:` indented 2"),
                      error.message)
        XCTAssertTrue(error.message.contains("YAML nests by indentation"), error.message)
    }

    func testIndentationHintNeverShowsAValue() {
        let hint = YAMLDocument.indentationHint("did not find expected key", line: 2,
                                                text: "secrets:\n  - \"s3cr3t:value\"\n")
        XCTAssertEqual(hint?.contains("s3cr3t"), false, hint ?? "")
        XCTAssertEqual(hint?.contains("(a list item)"), true, hint ?? "")
    }

    func testRootMustBeAMapping() throws {
        let error = try only(errors("- listen\n- upstream\n"))
        XCTAssertEqual(error.kind, .wrongType)
        XCTAssertEqual(error.line, 1)
        XCTAssertEqual(error.column, 1)
    }

    func testErrorsAreCollectedInFileOrder() throws {
        let yaml = """
            listen: nowhere
            public_url: https://app.example.com
            upstream: ftp://127.0.0.1
            apple:
              team_id: ABCDE12345
              client_id: com.example.web
              key_id: XYZ123ABCD
              private_key_file: AuthKey.p8
            session:
              secrets: [env:SIDECAR_COOKIE_SECRET]
            limits:
              max_header_bytes: lots
              idle_timeout: forever
            """
        let all = try errors(yaml)
        XCTAssertEqual(all.map(\.path), ["listen", "upstream", "limits.max_header_bytes", "limits.idle_timeout"])
        XCTAssertEqual(all.map(\.line), [1, 3, 12, 13])
    }

    func testLoadNamesTheFileAndUnreadableFile() throws {
        let directory = try Fixture.directory(self)
        let path = directory + "/sidecar.yaml"
        try "listen: [\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try Config.load(file: path, environment: [:])) { error in
            let errors = (error as? ConfigErrors)?.errors ?? []
            XCTAssertEqual(errors.first?.file, path)
            XCTAssertTrue(errors.first?.description.hasPrefix(path + ":") ?? false)
        }
        XCTAssertThrowsError(try Config.load(file: directory + "/missing.yaml", environment: [:])) { error in
            XCTAssertEqual((error as? ConfigErrors)?.errors.first?.message,
                           "cannot read \"\(directory)/missing.yaml\": No such file or directory")
        }
    }

    func testLoadResolvesRelativePathsAgainstTheConfigDirectory() throws {
        let directory = try Fixture.directory(self)
        let path = directory + "/sidecar.yaml"
        try Fixture.minimal.write(toFile: path, atomically: true, encoding: .utf8)
        let config = try Config.load(file: path, environment: Fixture.environment)
        XCTAssertEqual(config.apple.privateKeyFile, directory + "/AuthKey.p8")
        XCTAssertEqual(config.file, path)
    }
}

final class DuplicateKeyTests: XCTestCase {
    func testQuotedAndPlainSpellingsOfOneKey() throws {
        let all = try errors(Fixture.minimal + "\"workers\": 2\nworkers: 3\n")
        XCTAssertEqual(all.map(\.description), [#"sidecar.yaml:12:1: workers: duplicate key "workers" (first set at line 11)"#])
    }

    func testThreeOccurrencesOnOneFlowLine() throws {
        let all = try errors(Fixture.minimal + "log: {pii: true, pii: false, pii: true}\n")
        XCTAssertEqual(all.map(\.path), ["log.pii", "log.pii"])
        XCTAssertEqual(all.map(\.line), [11, 11])
        XCTAssertEqual(all.map(\.column), [18, 30], "columns as written, not shifted by the markers")
    }

    func testDuplicateAlongsideOtherErrors() throws {
        let all = try errors(Fixture.minimal + "limits:\n  idle_timeout: 5x\n  idle_timeout: 6s\n  header_timeot: 1s\n")
        XCTAssertEqual(all.map(\.kind), [.invalidValue, .duplicateKey, .unknownKey])
        XCTAssertEqual(all.map(\.line), [12, 13, 14])
    }
}
