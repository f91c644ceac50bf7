import ArgumentParser
import Glibc
import SidecarConfig

/// `sidecar transfer export|import`: moving the app's users to another developer team with
/// Apple's user-migration endpoint (TN3159).
struct TransferCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transfer", abstract: "Move the app's users to another team (Apple's user migration, TN3159).",
        subcommands: [TransferExportCommand.self, TransferImportCommand.self])
}

/// What both sides take.
struct TransferOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The configuration file (apple.*: this side's team, key and client).",
                                            valueName: "file"))
    var config: String = "sidecar.yaml"

    @Option(name: .long, help: ArgumentHelp("The client id the users signed in to (default: apple.client_id).",
                                            valueName: "id"))
    var clientID: String?

    @Option(name: .long, help: ArgumentHelp(
        "Where progress is kept; run the same command again to resume.", valueName: "file"))
    var progress: String?

    @Option(name: .long, help: "Calls to Apple per second at most.")
    var rate: Double = 10

    @Option(name: .long, help: "Users recorded (fsynced) together in the progress file.")
    var batch: Int = 50

    @Option(name: .long, help: "Tries per user when Apple fails or cannot be reached, before the run stops.")
    var retries: Int = 5

    func validate() throws {
        guard rate > 0, rate <= 1_000 else { throw ValidationError("--rate must be more than 0 and at most 1000") }
        guard (1...10_000).contains(batch) else { throw ValidationError("--batch must be 1 to 10000") }
        guard (0...20).contains(retries) else { throw ValidationError("--retries must be 0 to 20") }
    }

    func load() throws -> Config {
        do { return try Config.load(file: ServingConfiguration.configFile(config)) } catch {
            writeStandardError(error.errors.map(\.description).joined(separator: "\n") + "\n")
            throw ExitCode(1)
        }
    }

    /// Runs `side` over `inputs`, writes `header` and the rows to standard output once every
    /// user is answered; exit 3 when Apple refused some (named in the error column).
    func run(_ side: TransferRun.Side, job: String, inputs: [String], header: String, defaultProgress: String,
             rowMap: (String) -> String = { $0 }) throws {
        let loaded = try load()
        let settings = TransferRun.Settings(
            side: side, clientID: clientID ?? loaded.apple.clientID, rate: rate, batch: batch, retries: retries,
            progressPath: progress ?? defaultProgress)
        let journal = try TransferJournal(path: settings.progressPath, job: job + " " + loaded.apple.teamID + " "
            + settings.clientID)
        let rows: [String]
        do {
            rows = try TransferRun(settings: settings, config: loaded).run(inputs, journal: journal)
        } catch let stopped as TransferRun.Stopped {
            let left = inputs.filter { journal.done[$0] == nil }.count
            throw RuntimeFailure("\(TransferRun.label(side)) stopped with \(left) of \(inputs.count) users left: "
                + "\(stopped.description); what was done is kept in \(settings.progressPath): run the same command again "
                + "to resume")
        }
        var output = header + "\n"
        for row in rows { output += rowMap(row) + "\n" }
        try writeAllToStandardOutput(output)
        let refused = rows.filter { !$0.hasSuffix(",") }.count
        writeStandardError("\(TransferRun.label(side)): \(rows.count) users, \(rows.count - refused) answered"
            + (refused > 0 ? ", \(refused) refused by Apple (see the error column)" : "") + "\n")
        if refused > 0 { throw ExitCode(3) }
    }
}

struct TransferExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Sending team: each user's transfer_sub for the recipient team.",
        discussion: """
            Reads the users' Apple ids (sub), one per line, from standard input; writes
            sub,transfer_sub,error as CSV to standard output once every user is
            answered. The configuration is the sending team's (apple.team_id, key_id,
            private_key). Progress is kept in the --progress file (fsynced every --batch
            users): after an interruption — a crash, Apple unreachable — the same
            command resumes, asking Apple again for at most the users of one batch. Exit
            status: 0 every user answered, 3 Apple refused some (their error column
            names why, e.g. invalid_request for a user who revoked the app), 1 invalid
            configuration or input, 2 stopped: run it again to resume.
            """)

    @OptionGroup var options: TransferOptions

    @Option(name: .long, help: ArgumentHelp("The team id the app moves to.", valueName: "TEAMID"))
    var recipientTeam: String

    func run() throws {
        guard recipientTeam.utf8.count == 10,
              recipientTeam.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) })
        else {
            writeStandardError("--recipient-team: a team id is 10 upper-case letters and digits\n")
            throw ExitCode(1)
        }
        let inputs = try readInput { line, number in
            guard TransferInput.isIdentifier(line) else { throw TransferInput.Invalid(line: number, text: "not a sub") }
            return line
        }
        try options.run(.export(recipient: recipientTeam), job: "export " + recipientTeam, inputs: inputs,
                        header: "sub,transfer_sub,error", defaultProgress: "transfer-export.progress")
    }
}

struct TransferImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Recipient team: each transfer_sub's new sub, once the app is yours.",
        discussion: """
            Reads the CSV `sidecar transfer export` wrote (sub,transfer_sub,error; rows
            without a transfer_sub are skipped) from standard input; writes
            old_sub,new_sub,email,is_private_email,error to standard output once every
            user is answered (email is the new private relay address, empty for users
            who shared their own). The configuration is the recipient team's. Progress,
            resuming and exit status as for export.
            """)

    @OptionGroup var options: TransferOptions

    func run() throws {
        var oldSubs: [String: String] = [:]
        let inputs = try readInput { line, number in
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 2 else { throw TransferInput.Invalid(line: number, text: "expected sub,transfer_sub,error") }
            if number == 1 && fields[0] == "sub" { return nil }
            guard !fields[1].isEmpty else { return nil }
            guard TransferInput.isIdentifier(fields[0]), TransferInput.isIdentifier(fields[1]) else {
                throw TransferInput.Invalid(line: number, text: "not a sub and a transfer_sub")
            }
            oldSubs[fields[1]] = fields[0]
            return fields[1]
        }
        // The journal is keyed by transfer_sub; the output names the old sub first.
        try options.run(.import, job: "import", inputs: inputs, header: "old_sub,new_sub,email,is_private_email,error",
                        defaultProgress: "transfer-import.progress") { row in
            let fields = row.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false)
            let transferSub = String(fields[0])
            let rest: Substring = fields.count > 1 ? fields[1] : ""
            return (oldSubs[transferSub] ?? transferSub) + "," + rest
        }
    }
}

enum TransferInput {
    struct Invalid: Error {
        let line: Int
        let text: String
    }

    static func isIdentifier(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 255
            && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ",") && $0 != UInt8(ascii: "\"") }
    }
}

/// Standard input's lines (blank ones and `#` comments skipped), each read by `parse` (nil:
/// skipped), duplicates once.
func readInput(_ parse: (String, Int) throws -> String?) throws -> [String] {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if n < 0, errno == EINTR { continue }
        guard n > 0 else { break }
        bytes += buffer[0..<n]
        guard bytes.count <= 256 << 20 else { throw RuntimeFailure("standard input: more than 256 MiB") }
    }
    var seen = Set<String>()
    var inputs: [String] = []
    for (index, raw) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
        var line = String(decoding: raw, as: UTF8.self)
        if line.hasSuffix("\r") { line.removeLast() }
        line = String(line.drop { $0 == " " || $0 == "\t" })
        while line.last == " " || line.last == "\t" { line.removeLast() }
        if line.isEmpty || line.hasPrefix("#") { continue }
        do {
            guard let value = try parse(line, index + 1), seen.insert(value).inserted else { continue }
            inputs.append(value)
        } catch let invalid as TransferInput.Invalid {
            writeStandardError("standard input, line \(invalid.line): \(invalid.text)\n")
            throw ExitCode(1)
        }
    }
    return inputs
}

/// Writes all of `text` to standard output.
func writeAllToStandardOutput(_ text: String) throws {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
        if n < 0, errno == EINTR { continue }
        guard n > 0 else { throw RuntimeFailure("standard output: \(String(cString: strerror(errno)))") }
        offset += n
    }
}
