/// "Did you mean …?" for unknown keys.
enum Suggestion {
    /// The closest sibling key by edit distance (ignoring case, `_` and `-`), else a key with
    /// the same name in another section (returned as its full path).
    static func closest(to key: String, siblings: [String], elsewhere: [String]) -> String? {
        let target = normalize(key)
        let limit = max(1, min(3, target.count / 3))
        let ranked = siblings.map { ($0, distance(target, normalize($0))) }.filter { $0.1 <= limit }
        if let best = ranked.min(by: { $0.1 < $1.1 }) { return best.0 }
        return elsewhere.first { path in
            normalize(String(path.split(separator: ".").last ?? "")) == target
        }
    }

    private static func normalize(_ text: String) -> [Character] {
        Array(text.lowercased().filter { $0 != "_" && $0 != "-" })
    }

    static func distance(_ lhs: [Character], _ rhs: [Character]) -> Int {
        if lhs.isEmpty { return rhs.count }
        var previous = Array(0...rhs.count)
        for (i, left) in lhs.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: rhs.count)
            for (j, right) in rhs.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (left == right ? 0 : 1))
            }
            previous = current
        }
        return previous[rhs.count]
    }
}
