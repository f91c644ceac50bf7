import XCTest

@testable import SidecarHTTP

/// `FieldForwarding` decides each field line by one tagged lookup and takes the `Connection`
/// options from the parse; these tests hold it to the rules field by field.
final class FieldForwardingTests: XCTestCase {
    func testTagsFirstNameWinsAndExactBeatsPrefix() {
        let set = HeaderNameSet(tagged: [("X-A", 3), ("x_a", 4), ("X-*", 5), ("Long-" + String(repeating: "n", count: 70), 6), ("B", 7)])
        XCTAssertEqual(set.tag(of: "x-a"), 3)
        XCTAssertEqual(set.tag(of: "X-Other"), 5)
        XCTAssertEqual(set.tag(of: "long-" + String(repeating: "N", count: 70)), 6)
        XCTAssertEqual(set.tag(of: "b"), 7)
        XCTAssertEqual(set.tag(of: "c"), 0)
        XCTAssertEqual(set.tag(of: ""), 0)
        XCTAssertTrue(set.contains("X_A"))
        XCTAssertFalse(set.contains("Y-A"))
    }

    func testConnectionListsFieldNamesOnlyForOtherOptions() throws {
        for (value, lists) in [("keep-alive", false), ("Upgrade, keep-alive", false), ("close", true), ("x-hop", true), ("", false)] {
            let text = "GET / HTTP/1.1\nHost: h\n" + (value.isEmpty ? "" : "Connection: \(value)\n") + "\n"
            let request = try XCTUnwrap(parseRequest(crlf(text)).get())
            XCTAssertEqual(request.connection.listsFieldNames, lists, value)
            let response = try XCTUnwrap(parseResponse(crlf("HTTP/1.1 200 OK\nContent-Length: 0\nConnection: \(value)\n\n")).get())
            XCTAssertEqual(response.connection.listsFieldNames, lists, value)
        }
    }

    func testSpecialNamesKeepTheirRulesWhateverTheDropList() throws {
        let forwarding = FieldForwarding(dropping: ["content-length", "Host", "upgrade", "X-Drop", "X-Pre-*"])
        let head = try XCTUnwrap(parseRequest(crlf("""
            POST / HTTP/1.1
            X-Listed: early
            Host: h
            Content-Length: 007
            X-Drop: 1
            X-Pre-Anything: 1
            Connection: X-Listed, host, close
            Upgrade: websocket
            Close: 1
            X-Kept: 1


            """)).get())
        var writer = HeadWriter()
        writer.appendFields(of: head, forwarding: forwarding)
        XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), "Content-Length: 7\r\nX-Kept: 1\r\n")
        writer.reset()
        writer.appendFields(of: head, forwarding: .hopByHopOnly, keepUpgrade: true)
        XCTAssertEqual(
            String(decoding: writer.bytes, as: UTF8.self),
            "Host: h\r\nContent-Length: 7\r\nX-Drop: 1\r\nX-Pre-Anything: 1\r\nUpgrade: websocket\r\nX-Kept: 1\r\nConnection: upgrade\r\n")
    }

    /// Random heads over names that hit every rule, against the rules written out one
    /// comparison at a time.
    func testRandomHeadsAgainstTheRulesOneByOne() throws {
        let names = ["Host", "Content-Length", "content_length", "Connection", "Keep-Alive", "TE", "Trailer", "Transfer-Encoding",
                     "Upgrade", "Proxy-Authorization", "HTTP2-Settings", "X-Drop", "x_drop", "X-Pre-A", "X-Listed", "Close", "Cookie",
                     "Accept", "X-Dro", "X-Dropp", "Date", "Server", "A"]
        let connectionValues = ["keep-alive", "close", "x-listed", "X_Listed, keep-alive", "upgrade", "host, cookie", "te"]
        let dropped = ["x-drop", "X-Pre-*", "Cookie"]
        let forwarding = FieldForwarding(dropping: dropped)
        let dropSet = HeaderNameSet(dropped)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var lines = ["GET / HTTP/1.1", "Host: h"]
            for _ in 0..<Int.random(in: 0...8, using: &generator) {
                let name = names.randomElement(using: &generator)!
                switch name.lowercased() {
                case "host": continue
                case "connection": lines.append("\(name): \(connectionValues.randomElement(using: &generator)!)")
                case "content-length": lines.append("\(name): \(["5", "05", "5, 5"].randomElement(using: &generator)!)")
                case "transfer-encoding": continue  // its framing rules are the parser's
                default: lines.append("\(name): v\(Int.random(in: 0...9, using: &generator))")
                }
            }
            guard let head = try? parseRequest(crlf(lines.joined(separator: "\n") + "\n\n")).get() else { continue }
            let keepUpgrade = Bool.random(using: &generator)
            var writer = HeadWriter()
            writer.appendFields(of: head, forwarding: forwarding, keepUpgrade: keepUpgrade)
            let expected = Self.forwardedOneByOne(head, dropping: dropSet, keepUpgrade: keepUpgrade)
            XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), expected, lines.joined(separator: " | "))
        }
    }

    /// The rules, each its own comparison: Content-Length once and canonical, never spelt
    /// with `_`; Upgrade only
    /// with `keepUpgrade`; hop-by-hop and dropped names out; names `Connection` lists out,
    /// except Host.
    private static func forwardedOneByOne(_ head: HTTPRequestHead, dropping: HeaderNameSet, keepUpgrade: Bool) -> String {
        func lower(_ field: HTTPField) -> String { head.string(field.name).lowercased().replacingOccurrences(of: "_", with: "-") }
        var listed: Set<String> = []
        for field in head.fields where lower(field) == "connection" {
            for option in head.string(field.value).split(separator: ",") {
                let name = option.trimmingCharacters(in: .whitespaces).lowercased().replacingOccurrences(of: "_", with: "-")
                if name != "keep-alive" && name != "upgrade" { listed.insert(name) }
            }
        }
        var out = ""
        var wroteLength = false
        var wroteUpgrade = false
        for field in head.fields {
            let name = lower(field)
            if name == "content-length" {
                if !wroteLength && !head.string(field.name).contains("_") {
                    wroteLength = true
                    let value = head.string(field.value)
                    let canonical = String(Int(value.prefix { $0.isNumber })!)
                    out += canonical == value ? "\(head.string(field.name)): \(value)\r\n" : "Content-Length: \(canonical)\r\n"
                }
                continue
            }
            if name == "upgrade" && keepUpgrade {
                wroteUpgrade = true
            } else if HeaderNameSet.hopByHop.contains(name) || dropping.contains(name) || (listed.contains(name) && name != "host") {
                continue
            }
            out += "\(head.string(field.name)): \(head.string(field.value))\r\n"
        }
        if wroteUpgrade { out += "Connection: upgrade\r\n" }
        return out
    }
}
