import Foundation
import SidecarCrypto

/// The display name from the callback's unsigned `user` JSON: only the name is
/// taken (never the email), each part cleaned of control characters and cut to 256 bytes of
/// UTF-8, joined as `First Last` or just the part that is present.
enum AppleUserName {
    static let maximumPartBytes = 256

    enum Outcome: Equatable {
        case name(String)
        case noName
        case invalidJSON
    }

    static func parse(_ json: String) -> Outcome {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(json.utf8)),
              let object = value.objectValue
        else { return .invalidJSON }
        guard let name = object["name"]?.objectValue else { return .noName }
        return join(first: name["firstName"]?.stringValue, last: name["lastName"]?.stringValue).map { .name($0) } ?? .noName
    }

    /// `First Last`, or the one part present, each part cleaned; nil when nothing is left.
    /// Also the rule for the names a native app posts.
    static func join(first: String?, last: String?) -> String? {
        let parts = [first, last].compactMap { $0 }.map(clean).filter { !$0.isEmpty }
        return parts.isEmpty ? nil : parts.joined(separator: " ")
    }

    /// Control characters (C0, DEL, C1) removed, then cut to at most 256 bytes without
    /// splitting a character; surrounding spaces trimmed.
    static func clean(_ part: String) -> String {
        var out = String.UnicodeScalarView()
        var bytes = 0
        for scalar in part.unicodeScalars {
            let v = scalar.value
            if v < 0x20 || (0x7F...0x9F).contains(v) { continue }
            let width = String(scalar).utf8.count
            if bytes + width > maximumPartBytes { break }
            bytes += width
            out.append(scalar)
        }
        return String(out).trimmingCharacters(in: .whitespaces)
    }
}
