import Foundation
import SidecarApple
import SidecarCrypto
import XCTest

/// Moving an app to another team (TN3159): the client-credentials token, `/auth/usermigrationinfo`
/// on both sides, `POST /emulator/transfer`, and `transfer_sub` in id_tokens for 60 days.
final class MigrationTests: XCTestCase {
    static let recipient = "NEWTEAM123"

    private func accessToken(_ emulator: EmulatorFixture, team: String = EmulatorFixture.teamID,
                             client: String = EmulatorFixture.webClient) throws -> HTTPReply {
        try emulator.postForm("/auth/token", [
            ("grant_type", "client_credentials"), ("scope", "user.migration"), ("client_id", client),
            ("client_secret", try emulator.secret(client: client, team: team)),
        ])
    }

    private func token(_ emulator: EmulatorFixture, team: String = EmulatorFixture.teamID) throws -> String {
        let reply = try accessToken(emulator, team: team)
        XCTAssertEqual(reply.status, 200, reply.text)
        let body = try reply.jsonObject()
        XCTAssertEqual(body["token_type"]?.stringValue, "Bearer")
        XCTAssertEqual(body["expires_in"]?.integerValue, 3600)
        return try XCTUnwrap(body["access_token"]?.stringValue)
    }

    private func migrate(_ emulator: EmulatorFixture, _ pairs: [(String, String)], token: String?,
                         team: String = EmulatorFixture.teamID) throws -> HTTPReply {
        var headers = [("Content-Type", "application/x-www-form-urlencoded")]
        if let token { headers.append(("Authorization", "Bearer " + token)) }
        let form = pairs + [("client_id", EmulatorFixture.webClient),
                            ("client_secret", try emulator.secret(team: team))]
        return try RawHTTP.request(emulator.address, "POST", "/auth/usermigrationinfo", headers: headers, body: formBody(form))
    }

    /// Signs the auto-approved user in and returns the id_token's claims.
    private func signIn(_ emulator: EmulatorFixture, team: String = EmulatorFixture.teamID) throws -> [String: JSONValue] {
        let fields = try emulator.authorize()
        let reply = try emulator.exchange(code: try XCTUnwrap(fields["code"]), secret: try emulator.secret(team: team))
        XCTAssertEqual(reply.status, 200, reply.text)
        let idToken = try XCTUnwrap(try reply.jsonObject()["id_token"]?.stringValue)
        _ = try emulator.verify(idToken)
        let payload = idToken.split(separator: ".")[1]
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(try XCTUnwrap(Base64URL.decode(String(payload)))))
        return try XCTUnwrap(value.objectValue)
    }

    func testTheSendingTeamMintsTransferSubsAndTheRecipientExchangesThemOnceTheAppIsTheirs() throws {
        let emulator = try EmulatorFixture()
        let oldSub = try XCTUnwrap(try signIn(emulator)["sub"]?.stringValue)
        let sending = try token(emulator)
        let minted = try migrate(emulator, [("sub", oldSub), ("target", Self.recipient)], token: sending)
        XCTAssertEqual(minted.status, 200, minted.text)
        let transferSub = try XCTUnwrap(try minted.jsonObject()["transfer_sub"]?.stringValue)
        XCTAssertNotEqual(transferSub, oldSub)
        let again = try migrate(emulator, [("sub", oldSub), ("target", Self.recipient)], token: sending)
        XCTAssertEqual(try again.jsonObject()["transfer_sub"]?.stringValue, transferSub, "the same every time it is asked")

        // Before the transfer the recipient team's secret is nobody's.
        XCTAssertEqual(try accessToken(emulator, team: Self.recipient).status, 400)

        let moved = try emulator.postJSON("/emulator/transfer", #"{"client_id":"com.example.web","team_id":"NEWTEAM123"}"#)
        XCTAssertEqual(moved.status, 200, moved.text)
        XCTAssertEqual(try moved.jsonObject()["from_team"]?.stringValue, EmulatorFixture.teamID)
        XCTAssertEqual(try emulator.get("/emulator/transfers").jsonArray().count, 1)

        let receiving = try token(emulator, team: Self.recipient)
        let exchanged = try migrate(emulator, [("transfer_sub", transferSub)], token: receiving, team: Self.recipient)
        XCTAssertEqual(exchanged.status, 200, exchanged.text)
        let newSub = try XCTUnwrap(try exchanged.jsonObject()["sub"]?.stringValue)
        XCTAssertNotEqual(newSub, oldSub)
        XCTAssertNil(try exchanged.jsonObject()["email"], "a user who shared their address keeps it: only relay addresses change")

        // Users signing in now get the recipient team's sub, with their transfer_sub.
        let claims = try signIn(emulator, team: Self.recipient)
        XCTAssertEqual(claims["sub"]?.stringValue, newSub)
        XCTAssertEqual(claims["transfer_sub"]?.stringValue, transferSub)
        // The sending team's secret no longer signs the app in.
        let fields = try emulator.authorize()
        XCTAssertEqual(try emulator.exchange(code: try XCTUnwrap(fields["code"])).status, 400)
        // The sending team may still mint during the window; the recipient cannot mint back to itself.
        XCTAssertEqual(try migrate(emulator, [("sub", oldSub), ("target", Self.recipient)], token: try token(emulator)).status, 200)

        // Sixty days on, the window is closed: no exchange, no transfer_sub.
        emulator.clock.advance(60 * 86_400 + 1)
        let late = try migrate(emulator, [("transfer_sub", transferSub)], token: try token(emulator, team: Self.recipient),
                               team: Self.recipient)
        XCTAssertEqual(late.status, 400)
        XCTAssertEqual(try late.jsonObject()["error"]?.stringValue, "invalid_grant")
        XCTAssertNil(try signIn(emulator, team: Self.recipient)["transfer_sub"])
        XCTAssertEqual(try accessToken(emulator).status, 400, "the sending team's secret is nobody's after the window")
    }

    /// `POST /emulator/transfer/age`: the window closes as it would sixty days on, while the
    /// clock (and so every token's times) stays where it is.
    func testAgingATransferClosesItsWindowWithoutMovingTheClock() throws {
        let emulator = try EmulatorFixture()
        XCTAssertEqual(try emulator.postJSON("/emulator/transfer/age", #"{"client_id":"com.example.web","days":1}"#).status,
                       400, "never transferred")
        XCTAssertEqual(try emulator.postJSON("/emulator/transfer", #"{"client_id":"com.example.web","team_id":"NEWTEAM123"}"#).status, 200)
        let before = emulator.clock.now
        var aged = try emulator.postJSON("/emulator/transfer/age", #"{"client_id":"com.example.web","days":59}"#)
        XCTAssertEqual(aged.status, 200, aged.text)
        XCTAssertEqual(try aged.jsonObject()["at"]?.integerValue, before - 59 * 86_400)
        XCTAssertNotNil(try signIn(emulator, team: Self.recipient)["transfer_sub"], "day 59: the window is open")
        aged = try emulator.postJSON("/emulator/transfer/age", #"{"client_id":"com.example.web","seconds":86400}"#)
        XCTAssertEqual(try aged.jsonObject()["window_ends"]?.integerValue, before, "day 60: it closes now")
        let claims = try signIn(emulator, team: Self.recipient)
        XCTAssertNil(claims["transfer_sub"])
        XCTAssertEqual(claims["iat"]?.integerValue, before, "tokens keep the clock")
        XCTAssertEqual(emulator.clock.now, before)
        for body in [#"{"client_id":"com.example.web"}"#, #"{"client_id":"com.example.web","days":1,"seconds":1}"#,
                     #"{"client_id":"com.example.web","days":-1}"#, #"{"client_id":"com.example.web","days":"1"}"#] {
            XCTAssertEqual(try emulator.postJSON("/emulator/transfer/age", body).status, 400, body)
        }
    }

    func testAPrivateRelayUserGetsTheRecipientTeamsRelayAddress() throws {
        let emulator = try EmulatorFixture(autoApprove: TestUser(email: "hidden@example.com", hideMyEmail: true))
        let oldSub = try XCTUnwrap(try signIn(emulator)["sub"]?.stringValue)
        let minted = try migrate(emulator, [("sub", oldSub), ("target", Self.recipient)], token: try token(emulator))
        let transferSub = try XCTUnwrap(try minted.jsonObject()["transfer_sub"]?.stringValue)
        XCTAssertEqual(try emulator.postJSON("/emulator/transfer", #"{"client_id":"com.example.web","team_id":"NEWTEAM123"}"#).status, 200)
        let exchanged = try migrate(emulator, [("transfer_sub", transferSub)], token: try token(emulator, team: Self.recipient),
                                    team: Self.recipient).jsonObject()
        XCTAssertEqual(exchanged["is_private_email"], .bool(true))
        let email = try XCTUnwrap(exchanged["email"]?.stringValue)
        XCTAssertTrue(email.hasSuffix("@privaterelay.appleid.com"))
        let claims = try signIn(emulator, team: Self.recipient)
        XCTAssertEqual(claims["email"]?.stringValue, email, "the address the app is told is the one it then gets")
    }

    func testEveryMalformedOrMisdirectedCallIsRefusedWithApplesError() throws {
        let emulator = try EmulatorFixture()
        let sub = try XCTUnwrap(try signIn(emulator)["sub"]?.stringValue)
        let token = try token(emulator)
        func refused(_ pairs: [(String, String)], token: String?, _ error: String, line: UInt = #line) throws {
            let reply = try migrate(emulator, pairs, token: token)
            XCTAssertEqual(reply.status, 400, reply.text, line: line)
            XCTAssertEqual(try reply.jsonObject()["error"]?.stringValue, error, line: line)
        }
        try refused([("sub", sub), ("target", Self.recipient)], token: nil, "invalid_grant")
        try refused([("sub", sub), ("target", Self.recipient)], token: "m" + String(repeating: "0", count: 40), "invalid_grant")
        try refused([("sub", sub)], token: token, "invalid_request")
        try refused([("sub", sub), ("target", "newteam123")], token: token, "invalid_request")
        try refused([("sub", sub), ("target", EmulatorFixture.teamID)], token: token, "invalid_request")
        try refused([("sub", "000000.00000000000000000000000000000000.0000"), ("target", Self.recipient)], token: token,
                    "invalid_request")
        try refused([("sub", sub), ("target", Self.recipient), ("transfer_sub", sub)], token: token, "invalid_request")
        try refused([("transfer_sub", "000000.00000000000000000000000000000000.0000")], token: token, "invalid_request")
        // A token of another client is not this client's.
        let other = try XCTUnwrap(try accessToken(emulator, client: EmulatorFixture.otherClient).jsonObject()["access_token"]?.stringValue)
        try refused([("sub", sub), ("target", Self.recipient)], token: other, "invalid_grant")
        // The client-credentials grant needs the migration scope.
        let noScope = try emulator.postForm("/auth/token", [
            ("grant_type", "client_credentials"), ("client_id", EmulatorFixture.webClient),
            ("client_secret", try emulator.secret()),
        ])
        XCTAssertEqual(try noScope.jsonObject()["error"]?.stringValue, "invalid_scope")
        // Faults are armed for it as for the token endpoint.
        XCTAssertEqual(try emulator.postJSON("/emulator/faults", #"{"faults":["http_500"]}"#).status, 200)
        XCTAssertEqual(try migrate(emulator, [("sub", sub), ("target", Self.recipient)], token: token).status, 500)
        XCTAssertEqual(try migrate(emulator, [("sub", sub), ("target", Self.recipient)], token: token).status, 200)
        // Transfers are checked too.
        for body in [#"{"client_id":"com.example.nope","team_id":"NEWTEAM123"}"#,
                     #"{"client_id":"com.example.web","team_id":"TEAM123456"}"#,
                     #"{"client_id":"com.example.web","team_id":"short"}"#, #"{"client_id":"com.example.web"}"#] {
            XCTAssertEqual(try emulator.postJSON("/emulator/transfer", body).status, 400, body)
        }
    }
}

extension HTTPReply {
    func jsonObject() throws -> [String: JSONValue] {
        try XCTUnwrap(try JSONDecoder().decode(JSONValue.self, from: Data(body)).objectValue, text)
    }

    func jsonArray() throws -> [JSONValue] {
        guard case .array(let items) = try JSONDecoder().decode(JSONValue.self, from: Data(body)) else {
            XCTFail("not an array: \(text)")
            return []
        }
        return items
    }
}
