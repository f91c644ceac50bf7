import SidecarCrypto

/// The values a page may show; every one is HTML-escaped when filled in.
public enum PagePlaceholder: String, CaseIterable, Sendable {
    case status, title, message, reason
    case requestId = "request_id"
    case loginURL = "login_url"
    case userName = "user_name"
    /// The page's language tag (`en`, `pt-BR`, `zh-Hant`, …), for `lang` and `Content-Language`.
    case language
    /// `ltr` or `rtl`, for `dir`.
    case direction
    /// Apple's "Sign in with Apple" button title in the page's language.
    case signInWithApple = "sign_in_with_apple"

    /// Fixed for a language: filled in once per language at start, not per request.
    var isPerLanguage: Bool { self == .language || self == .direction || self == .signInWithApple }
}

/// Why a template cannot be used, with its 1-based line and column (in characters).
public struct PageTemplateError: Error, Equatable, CustomStringConvertible {
    public let line: Int
    public let column: Int
    public let message: String

    public var description: String { "\(line):\(column): \(message)" }
}

/// A page parsed once (at start or reload) into literal bytes and placeholders, so serving
/// it is byte splicing: no parsing, no Foundation, no string formatting per request.
public struct PageTemplate: Sendable {
    enum Segment: Sendable, Equatable {
        case literal([UInt8])
        case placeholder(PagePlaceholder)
    }

    let segments: [Segment]
    /// Base64 SHA-256 of each `<style>` element's content, for the page's CSP.
    let styleHashes: [String]

    public init(_ text: String) throws(PageTemplateError) {
        let bytes = Array(text.utf8)
        segments = try Self.parse(bytes)
        styleHashes = try Self.styleHashes(bytes)
    }

    private init(segments: [Segment], styleHashes: [String]) {
        self.segments = segments
        self.styleHashes = styleHashes
    }

    /// This template with each placeholder `value` answers (already escaped) made literal, and
    /// neighbouring literals joined, so a page precomputed per language splices only what
    /// varies per request. Style elements hold no placeholders, so their hashes stay.
    func binding(_ value: (PagePlaceholder) -> [UInt8]?) -> PageTemplate {
        var bound: [Segment] = []
        for segment in segments {
            var literal: [UInt8]
            switch segment {
            case .literal(let bytes): literal = bytes
            case .placeholder(let placeholder):
                guard let bytes = value(placeholder) else {
                    bound.append(segment)
                    continue
                }
                literal = bytes
            }
            if case .literal(let previous)? = bound.last {
                bound[bound.count - 1] = .literal(previous + literal)
            } else {
                bound.append(.literal(literal))
            }
        }
        return PageTemplate(segments: bound, styleHashes: styleHashes)
    }

    /// `{{name}}` (spaces inside the braces allowed). Anything else between `{{` and `}}`,
    /// or a `{{` never closed on its line, is refused: a typo must not reach a visitor.
    private static func parse(_ bytes: [UInt8]) throws(PageTemplateError) -> [Segment] {
        var segments: [Segment] = []
        var literal: [UInt8] = []
        var i = 0
        while i < bytes.count {
            guard bytes[i] == UInt8(ascii: "{"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "{") else {
                literal.append(bytes[i])
                i += 1
                continue
            }
            var end = i + 2
            while end + 1 < bytes.count, !(bytes[end] == UInt8(ascii: "}") && bytes[end + 1] == UInt8(ascii: "}")),
                  bytes[end] != UInt8(ascii: "\n") {
                end += 1
            }
            guard end + 1 < bytes.count, bytes[end] == UInt8(ascii: "}") else {
                throw error(at: i, in: bytes, "unclosed placeholder: '{{' without '}}' on the same line")
            }
            let name = String(decoding: bytes[(i + 2)..<end], as: UTF8.self).trimmingASCIISpaces()
            guard let placeholder = PagePlaceholder(rawValue: name) else {
                let known = PagePlaceholder.allCases.map { "{{\($0.rawValue)}}" }.joined(separator: ", ")
                throw error(at: i, in: bytes, "unknown placeholder {{\(name)}}; known: \(known)")
            }
            if !literal.isEmpty { segments.append(.literal(literal)) }
            literal = []
            segments.append(.placeholder(placeholder))
            i = end + 2
        }
        if !literal.isEmpty { segments.append(.literal(literal)) }
        return segments
    }

    /// The CSP allows exactly these style elements; a placeholder inside one would change its
    /// hash per request, so it is refused.
    private static func styleHashes(_ bytes: [UInt8]) throws(PageTemplateError) -> [String] {
        var hashes: [String] = []
        var from = 0
        while let open = find("<style", in: bytes, from: from) {
            guard let close = find(">", in: bytes, from: open), let end = find("</style", in: bytes, from: close) else {
                throw error(at: open, in: bytes, "<style> element without </style>")
            }
            let content = bytes[(close + 1)..<end]
            if let brace = find("{{", in: bytes, from: close + 1), brace < end {
                throw error(at: brace, in: bytes, "placeholders are not allowed inside <style>")
            }
            hashes.append(Base64.encode(SHA256.hash(content)))
            from = end + 7
        }
        return hashes
    }

    /// First index of ASCII `needle` (compared case-insensitively) at or after `from`.
    private static func find(_ needle: StaticString, in bytes: [UInt8], from: Int) -> Int? {
        let pattern = Array(UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount))
        guard pattern.count <= bytes.count else { return nil }
        var i = from
        while i + pattern.count <= bytes.count {
            var match = true
            for j in 0..<pattern.count where lowered(bytes[i + j]) != lowered(pattern[j]) {
                match = false
                break
            }
            if match { return i }
            i += 1
        }
        return nil
    }

    private static func lowered(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b | 0x20 : b }

    private static func error(at offset: Int, in bytes: [UInt8], _ message: String) -> PageTemplateError {
        var line = 1, column = 1
        for b in bytes[..<offset] {
            if b == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if b & 0xC0 != 0x80 {  // count characters, not UTF-8 continuation bytes
                column += 1
            }
        }
        return PageTemplateError(line: line, column: column, message: message)
    }
}

extension String {
    fileprivate func trimmingASCIISpaces() -> String {
        var scalars = Substring(self)
        while scalars.first == " " || scalars.first == "\t" { scalars.removeFirst() }
        while scalars.last == " " || scalars.last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
