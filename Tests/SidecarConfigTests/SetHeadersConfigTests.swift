import XCTest
import SidecarConfig

/// `rules[].set_headers`: what loads, and what is refused at the name's or value's line and
/// column.
final class SetHeadersConfigTests: XCTestCase {
    func testFieldsLoadInOrder() throws {
        let config = try parse(minimal(plus: """
            rules:
              - path: /billing/**
                set_headers:
                  X-Tenant: acme
                  X-Readonly: "1"
                  X-Note: a b\tc
              - path: /static/**
                public: true
                set_headers: {X-Zone: public}

            """))
        XCTAssertEqual(config.rules[0].setHeaders, [
            Config.StaticHeader(name: "X-Tenant", value: "acme"), Config.StaticHeader(name: "X-Readonly", value: "1"),
            Config.StaticHeader(name: "X-Note", value: "a b\tc"),
        ])
        XCTAssertEqual(config.rules[1].setHeaders, [Config.StaticHeader(name: "X-Zone", value: "public")])
        XCTAssertEqual(Config.StaticHeader(name: "X_Read_Only", value: "1").foldedName, "x-read-only")
    }

    func testNamesThatWouldChangeTheRequestAreRefusedWhereTheyAre() throws {
        for name in ["Host", "content_length", "Transfer-Encoding", "Connection", "TE", "Upgrade", "Expect",
                     "Proxy-Authorization", "Cookie", "Authorization", "X-Forwarded-For", "X_Forwarded_Host",
                     "Forwarded", "X-HTTP-Method-Override", "X-Request-Id", "X-Auth-User-Id", "x_auth_email",
                     "X-Who"] {
            let errors = try errors(minimal(plus: """
                headers:
                  user_id: X-Who
                rules:
                  - path: /x/**
                    set_headers:
                      \(name): v

                """))
            XCTAssertEqual(errors.count, 1, name)
            XCTAssertEqual(errors.first?.path, "rules[0].set_headers.\(name)", name)
            XCTAssertEqual(errors.first?.column, 7, name)
            XCTAssertEqual(errors.first?.file, "sidecar.yaml")
            XCTAssertNotNil(errors.first?.line)
        }
        // `X-Auth-User-Id` renamed is still the default an upstream may read: refused too.
    }

    func testValuesEveryReaderReadsAlikeOnly() throws {
        for (value, why) in [("\"a\\rb\"", "a CR"), ("\"a\\nb\"", "a LF"), ("\"a\\0b\"", "a NUL"), ("\"a\\u0001\"", "control"),
                             ("\"a \"", "trailing"), ("\"caf\\u00e9\"", "outside ASCII"), ("\"\"", "empty")] {
            let errors = try errors(minimal(plus: """
                rules:
                  - path: /x/**
                    set_headers:
                      X-A: \(value)

                """))
            XCTAssertEqual(errors.count, 1, value)
            XCTAssertEqual(errors.first?.path, "rules[0].set_headers.X-A", value)
            XCTAssertEqual(errors.first?.column, 12, value)
            XCTAssertTrue(errors.first?.message.contains(why) ?? false, "\(value): \(errors)")
        }
    }

    func testANameTwiceInAnySpellingADenyRuleAndTooManyAreRefused() throws {
        var errors = try errors(minimal(plus: """
            rules:
              - path: /x/**
                set_headers: {X-A: "1", x_a: "2"}

            """))
        XCTAssertEqual(errors.map(\.path), ["rules[0].set_headers.x_a"])
        errors = try self.errors(minimal(plus: """
            rules:
              - path: /x/**
                deny: true
                set_headers: {X-A: "1"}

            """))
        XCTAssertEqual(errors.map(\.path), ["rules[0].set_headers"])
        let many = (0...32).map { "X-F\($0): v" }.joined(separator: ", ")
        errors = try self.errors(minimal(plus: """
            rules:
              - path: /x/**
                set_headers: {\(many)}

            """))
        XCTAssertEqual(errors.map(\.path), ["rules[0].set_headers"])
        errors = try self.errors(minimal(plus: """
            rules:
              - path: /x/**
                set_headers: [X-A]

            """))
        XCTAssertEqual(errors.map(\.kind), [.wrongType])
    }
}
