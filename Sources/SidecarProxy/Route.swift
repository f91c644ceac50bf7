import SidecarHTTP

/// `rules`, compiled once per configuration load: which rule decides a request (a walk down
/// a trie of literal path segments, not a scan of globs) and what that rule says.
final class Route {
    /// A rule's decision as plain data: read per request without touching a reference count
    /// (reading a field of a `ProxyOptions.Rule` in an array copies the rule, retaining each
    /// of its strings and arrays).
    struct Action {
        var upstream: Int
        var isPublic: Bool
        var isAPI: Bool
        var deny: Bool
        var restrictsUsers: Bool
    }

    private let table: PathRuleTable
    private let actions: UnsafeMutableBufferPointer<Action>
    /// The rule's `allowed_*`, nil where it lets every signed-in user pass.
    private let access: [AccessRules?]
    let isEmpty: Bool

    init(_ rules: [ProxyOptions.Rule]) {
        table = PathRuleTable(rules.map(\.condition))
        actions = .allocate(capacity: max(1, rules.count))
        for (index, rule) in rules.enumerated() {
            (actions.baseAddress! + index).initialize(to: Action(
                upstream: rule.upstream, isPublic: rule.isPublic, isAPI: rule.isAPI, deny: rule.deny,
                restrictsUsers: rule.restrictsUsers))
        }
        access = rules.map { $0.restrictsUsers ? AccessRules($0) : nil }
        isEmpty = rules.isEmpty
    }

    deinit { actions.deallocate() }

    /// The first rule matching the normalized `path`, `method` and `host` (the `Host`
    /// value, port and all), nil when none does.
    func match(path: [UInt8], method: HTTPMethod, host: UnsafeRawBufferPointer?) -> Int? {
        guard !isEmpty else { return nil }
        return path.withUnsafeBytes { table.firstMatch(path: $0, method: method, host: host) }
    }

    /// What rule `index` (from `match`) decides.
    @inline(__always) func action(_ index: Int) -> Action { actions[index] }

    /// Why rule `index` refuses the signed-in user, nil when it lets them pass.
    func refusal(_ index: Int, subject: String, email: String?, privateEmail: Bool) -> AccessRules.Denial? {
        access[index]?.check(subject: subject, email: email, privateEmail: privateEmail)
    }
}
