import SidecarHTTP

/// `rules`, compiled once per configuration load: which rule decides a request (a walk down
/// a trie of literal path segments, not a scan of globs) and what that rule says.
final class Route {
    let rules: [ProxyOptions.Rule]
    private let table: PathRuleTable
    /// The rule's `allowed_*`, nil where it lets every signed-in user pass.
    private let access: [AccessRules?]

    init(_ rules: [ProxyOptions.Rule]) {
        self.rules = rules
        table = PathRuleTable(rules.map(\.condition))
        access = rules.map { $0.restrictsUsers ? AccessRules($0) : nil }
    }

    var isEmpty: Bool { rules.isEmpty }

    /// The first rule matching the normalized `path`, `method` and `host` (the `Host`
    /// value, port and all), nil when none does.
    func match(path: [UInt8], method: HTTPMethod, host: UnsafeRawBufferPointer?) -> Int? {
        guard !rules.isEmpty else { return nil }
        return path.withUnsafeBytes { table.firstMatch(path: $0, method: method, host: host) }
    }

    func restrictsUsers(_ index: Int) -> Bool { access[index] != nil }

    /// Why rule `index` refuses the signed-in user, nil when it lets them pass.
    func refusal(_ index: Int, subject: String, email: String?, privateEmail: Bool) -> AccessRules.Denial? {
        access[index]?.check(subject: subject, email: email, privateEmail: privateEmail)
    }
}
