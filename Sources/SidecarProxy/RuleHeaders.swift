import SidecarConfig

/// `set_headers` of the top-level rules and of every site's own rules, compiled once per
/// configuration load into one numbering: each distinct set of fields (a group; group 0 adds
/// nothing) rendered as the `Name: value` CRLF lines a forwarded request gets, so the request
/// path copies bytes and never builds them.
///
/// Rules with the same fields share a group: a request whose readings fall to different rules
/// (`Route.verdict`) is unambiguous as long as those rules add the same fields. One numbering
/// for every site: the rewriter renders any site's group, and strips every name any rule of
/// any site sets from every request.
final class RuleHeaders {
    typealias Group = Int32

    /// Each list's groups, by rule index: the top-level rules' (list 0), then each site's own
    /// rules' (list 1 + the site's index; empty for a site without rules of its own).
    let groupsOfList: [[Group]]
    /// The lines of each group, in memory this object owns (read per request without the
    /// retain and release an array costs).
    private let blocks: UnsafeMutableBufferPointer<UnsafeRawBufferPointer>
    /// The folded names each group sets.
    private let namesOfGroup: [[String]]
    /// Every name some rule sets: a client's own copy of each is dropped from every
    /// request (whichever rule decides it), in every spelling.
    let names: [String]
    /// The longest block: what a forwarded head may grow by.
    let maxBlockCount: Int

    /// The top-level rules and every site's own rules of `config`.
    convenience init(_ config: Config) {
        self.init(lists: [config.rules] + config.sites.map { $0.rules ?? [] })
    }

    /// List 0 of `lists` are the top-level rules, the others each site's own.
    init(lists: [[Config.Rule]]) {
        var sets: [[Config.StaticHeader]] = [[]]
        groupsOfList = lists.map { rules in
            rules.map { rule in
                if let known = sets.firstIndex(of: rule.setHeaders) { return Group(known) }
                sets.append(rule.setHeaders)
                return Group(sets.count - 1)
            }
        }
        blocks = .allocate(capacity: sets.count)
        var longest = 0
        for (group, fields) in sets.enumerated() {
            let bytes = fields.flatMap { Array("\($0.name): \($0.value)\r\n".utf8) }
            let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
            memory.copyBytes(from: bytes)
            (blocks.baseAddress! + group).initialize(to: UnsafeRawBufferPointer(rebasing: memory[0..<bytes.count]))
            longest = max(longest, bytes.count)
        }
        maxBlockCount = longest
        namesOfGroup = sets.map { fields in fields.map(\.foldedName) }
        var names: [String] = []
        for fields in sets {
            for field in fields where !names.contains(field.foldedName) { names.append(field.foldedName) }
        }
        self.names = names
    }

    deinit {
        for block in blocks { block.deallocate() }
        blocks.deallocate()
    }

    /// The lines group `group` adds (empty for 0).
    @inline(__always) func block(_ group: Group) -> UnsafeRawBufferPointer {
        blocks[Int(group)]
    }

    /// Whether a group sets `foldedName` (lower case, `_` as `-`).
    func sets(_ group: Group, foldedName: String) -> Bool {
        namesOfGroup[Int(group)].contains(foldedName)
    }
}
