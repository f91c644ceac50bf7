import SidecarConfig
import SidecarEvent
import SidecarHTTP
import XCTest

@testable import SidecarProxy

/// The admin listener's `/users/…`: which paths name a call, and who may make it.
final class UserAdministrationTests: XCTestCase {
    private let sub = "001234.0123456789abcdef0123456789abcdef.1234"

    func testOnlyTheEndpointsOwnSpellingsNameACall() {
        XCTAssertEqual(UserAdministration.Call(path: "/users/\(sub)", query: nil), .show(sub))
        XCTAssertEqual(UserAdministration.Call(path: "/users/\(sub)/revoke", query: nil), .revoke(sub, apple: false))
        XCTAssertEqual(UserAdministration.Call(path: "/users/\(sub)/revoke", query: "apple=1"), .revoke(sub, apple: true))
        for query in ["apple=0", "apple=true", "apple=1&x=1", "APPLE=1", "apple=1;", "apple%3D1", "apple"] {
            XCTAssertNil(UserAdministration.Call(path: "/users/\(sub)/revoke", query: query), query)
        }
        XCTAssertNil(UserAdministration.Call(path: "/users/\(sub)", query: "apple=1"), "show takes no query")
        for path in [
            "/users/", "/users//revoke", "/users/\(sub)/", "/users/\(sub)/revoke/", "/users/\(sub)//revoke",
            "/users/\(sub)/REVOKE", "/users/\(sub)/revoke/x", "/users/..", "/users/.", "/users/../metrics",
            "/users/%2e%2e", "/users/a%2Fb/revoke", "/users/a b", "/users/a;b/revoke", "/users/\(sub);x/revoke",
            "/users/" + String(repeating: "a", count: 256), "/Users/\(sub)", "//users/\(sub)", "/users/\u{e9}",
        ] {
            XCTAssertNil(UserAdministration.Call(path: path, query: nil), path)
        }
        XCTAssertNil(UserAdministration.Call(path: "/users/\(sub)/revoke", query: ""), "an empty query is a query")
        XCTAssertEqual(UserAdministration.Call(path: "/users/a-b_c.d", query: nil), .show("a-b_c.d"))
    }

    func testWithATokenOnlyExactlyThatBearerPasses() throws {
        let access = AdminAccess(token: Secret(bytes: Array("t0ken-of-thirty-two-characters-x".utf8), source: "inline"),
                                 listener: try SocketAddress(parsing: "0.0.0.0:9090"))
        XCTAssertEqual(access.verdict(for: request([("Authorization", "Bearer t0ken-of-thirty-two-characters-x")])), .allowed)
        XCTAssertEqual(access.verdict(for: request([("authorization", "BEARER t0ken-of-thirty-two-characters-x")])), .allowed)
        for fields in [
            [], [("Authorization", "Bearer t0ken-of-thirty-two-characters-")],
            [("Authorization", "Bearer t0ken-of-thirty-two-characters-xx")],
            [("Authorization", "Bearer  t0ken-of-thirty-two-characters-x")],
            [("Authorization", "Basic t0ken-of-thirty-two-characters-x")],
            [("Authorization", "Bearer t0ken-of-thirty-two-characters-x"),
             ("Authorization", "Bearer t0ken-of-thirty-two-characters-x")],
            [("Authorization", "Bearer")], [("Authorization", "Bearer ")],
        ] as [[(String, String)]] {
            XCTAssertEqual(access.verdict(for: request(fields)), .unauthenticated, "\(fields)")
        }
    }

    func testWithoutATokenOnlyALocalListenerAnswers() throws {
        for (address, local) in [("127.0.0.1:9090", true), ("127.9.9.9:1", true), ("[::1]:9090", true),
                                 ("0.0.0.0:9090", false), ("10.0.0.7:9090", false), ("[::]:9090", false)] {
            let access = AdminAccess(token: nil, listener: try SocketAddress(parsing: address))
            XCTAssertEqual(access.isOff, !local, address)
            XCTAssertEqual(access.verdict(for: request([])) == .allowed, local, address)
        }
        XCTAssertFalse(AdminAccess(token: nil, listener: try SocketAddress(unixPath: "/tmp/admin.sock")).isOff)
        XCTAssertTrue(AdminAccess(token: nil, listener: nil).isOff)
    }

    private func request(_ fields: [(String, String)]) -> ServiceRequest {
        var text = "POST /users/\(sub)/revoke HTTP/1.1\r\nHost: a\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        let head = try! HTTPRequestHead.parse(Array(text.utf8))!
        return ServiceRequest(head: head, body: [], peer: try! SocketAddress(parsing: "127.0.0.1:1"), isSecure: false)
    }
}
