import Foundation

/// `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date, as seconds from now,
/// clamped to a day so that a CA's typo cannot park renewal for a year.
enum RetryAfterField {
    static let maxSeconds = 86_400

    static func seconds(_ value: String, now: Date = Date()) -> Int? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.utf8.count <= 10, trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
           let seconds = Int(trimmed) {
            return min(seconds, maxSeconds)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return min(max(0, Int(date.timeIntervalSince(now).rounded(.up))), maxSeconds)
    }
}

extension RetryAfterField {
    static func of(_ response: ACMEHTTPResponse) -> Int? {
        response.header("Retry-After").flatMap { seconds($0) }
    }
}
