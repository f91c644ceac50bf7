import Glibc
import XCTest

@testable import SidecarStore

/// What opening does with damaged and foreign files (see `LogReplay` for the rules).
final class FileStoreRecoveryTests: FileStoreTestCase {
    /// The base state every damaged-log test starts from: one change of each kind.
    private func writeBase(_ store: FileStore) throws {
        try store.revokeSession(id: sessionID(1), expiresAt: clock.now + 3600)
        try store.revokeSubject("sub.base", issuedAtOrBeforeMs: 5_000, keepUntil: clock.now + 3600)
        XCTAssertEqual(store.claim(.loginState, key: "base", expiresAt: clock.now + 3600), .claimed)
        _ = try store.enqueueForward(payload: [1, 2, 3])
    }

    private func assertBase(_ store: FileStore, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertTrue(store.isRevoked(sessionID(1)), file: file, line: line)
        XCTAssertTrue(store.isRevoked(sessionID(0), subject: "sub.base", issuedAtMs: 5_000), file: file, line: line)
        XCTAssertEqual(store.claim(.loginState, key: "base", expiresAt: clock.now + 3600), .alreadyUsed, file: file, line: line)
        XCTAssertEqual(try store.pendingForwards().map(\.payload), [[1, 2, 3]], file: file, line: line)
    }

    /// A store closed and then released closes each of its descriptors once: a second close
    /// of a number the kernel has handed out again would close someone else's file (here the
    /// next store's log, whose appends then failed with EBADF).
    func testAClosedStoreClosesNoDescriptorAgainWhenReleased() throws {
        var store: FileStore? = try open()
        store!.close()
        // The numbers the store let go are the lowest free ones: open(2) hands them out next.
        let others = (0..<4).map { _ in Glibc.open("/dev/null", O_RDONLY) }
        defer { for fd in others where fd >= 0 { _ = Glibc.close(fd) } }
        store = nil
        for fd in others {
            XCTAssertNotEqual(fcntl(fd, F_GETFD), -1, "descriptor \(fd) was closed by the released store")
        }
    }

    /// A crash can cut the last append at any byte: whatever the cut, opening drops the
    /// partial record, keeps everything before it, cuts the file back and appends again.
    func testATornLastRecordAtEveryByteOffsetIsDropped() throws {
        let lastChanges: [(String, (FileStore) throws -> Void, (FileStore) throws -> Bool)] = [
            ("claim", { XCTAssertEqual($0.claim(.nativeNonce, key: "last", expiresAt: self.clock.now + 600), .claimed) },
             { $0.claim(.nativeNonce, key: "last", expiresAt: self.clock.now + 600) == .alreadyUsed }),
            ("revoke session", { try $0.revokeSession(id: sessionID(9), expiresAt: self.clock.now + 600) },
             { $0.isRevoked(sessionID(9)) }),
            ("revoke subject", { try $0.revokeSubject("sub.last", issuedAtOrBeforeMs: 9, keepUntil: self.clock.now + 600) },
             { $0.isRevoked(sessionID(0), subject: "sub.last", issuedAtMs: 9) }),
            ("enqueue forward", { _ = try $0.enqueueForward(payload: [UInt8](repeating: 0x41, count: 300)) },
             { try $0.pendingForwards().count == 2 }),
        ]
        for (name, writeLast, lastIsThere) in lastChanges {
            unlink(path)
            var store = try open()
            try writeBase(store)
            let baseLength = Files.size(path)
            try writeLast(store)
            store.close()
            let full = Files.read(path)
            XCTAssertGreaterThan(full.count, baseLength)

            for length in baseLength..<full.count {
                Files.write(Array(full[0..<length]), to: path)
                store = try open()
                XCTAssertEqual(Files.size(path), baseLength, "\(name), cut at \(length)")
                XCTAssertFalse(try lastIsThere(store), "\(name), cut at \(length)")
                try assertBase(store)
                XCTAssertEqual(store.openingNotes.count, length > baseLength ? 1 : 0, "\(store.openingNotes)")
                XCTAssertFalse(store.openingNotes.contains { $0.contains("CORRUPT") })
                // Appending works and the file reads clean afterwards.
                XCTAssertEqual(store.claim(.loginState, key: "after-\(length)", expiresAt: clock.now + 60), .claimed)
                store.close()
                store = try open()
                XCTAssertEqual(store.openingNotes, [], "\(name), cut at \(length)")
                XCTAssertEqual(store.claim(.loginState, key: "after-\(length)", expiresAt: clock.now + 60), .alreadyUsed)
                store.close()
            }
            // Uncut, the last change is there.
            Files.write(full, to: path)
            store = try open()
            XCTAssertTrue(try lastIsThere(store), name)
            store.close()
        }
        XCTAssertEqual(Files.names(in: directory.path), ["store"])  // no corruption copies
    }

    /// Blocks allocated but never written read as zeros after a crash: a torn tail too.
    func testAZeroFilledTailIsDropped() throws {
        let store = try open()
        try writeBase(store)
        store.close()
        let good = Files.read(path)
        Files.write(good + [UInt8](repeating: 0, count: 4096), to: path)
        let reopened = try open()
        try assertBase(reopened)
        XCTAssertEqual(Files.size(path), good.count)
    }

    /// A complete last record whose checksum fails was not all on disk: dropped like a cut one.
    func testABadChecksumOnTheLastRecordIsATornTail() throws {
        for (name, offsetInRecord) in [("length", 1), ("CRC", 5), ("body", 20)] {
            unlink(path)
            let store = try open()
            try writeBase(store)
            let baseLength = Files.size(path)
            XCTAssertEqual(store.claim(.loginState, key: "last", expiresAt: clock.now + 60), .claimed)
            store.close()
            var bytes = Files.read(path)
            bytes[baseLength + offsetInRecord] ^= 0x40
            Files.write(bytes, to: path)

            let reopened = try open()
            try assertBase(reopened)
            XCTAssertEqual(Files.size(path), baseLength, name)
            XCTAssertEqual(reopened.claim(.loginState, key: "last", expiresAt: clock.now + 60), .claimed, name)
            XCTAssertFalse(reopened.openingNotes.contains { $0.contains("CORRUPT") }, name)
            reopened.close()
        }
    }

    /// A corrupt record between good ones is skipped; the rest is kept, the damaged file is
    /// copied aside, and the live file is rewritten clean.
    func testACorruptRecordInTheMiddleIsSkippedAndTheFileCopiedAside() throws {
        let store = try open()
        try writeBase(store)
        let damagedRecordStart = Files.size(path)
        XCTAssertEqual(store.claim(.loginState, key: "damaged", expiresAt: clock.now + 60), .claimed)
        XCTAssertEqual(store.claim(.loginState, key: "after", expiresAt: clock.now + 60), .claimed)
        store.close()
        var bytes = Files.read(path)
        bytes[damagedRecordStart + 12] ^= 0x01
        Files.write(bytes, to: path)

        let reopened = try open()
        try assertBase(reopened)
        XCTAssertEqual(reopened.claim(.loginState, key: "after", expiresAt: clock.now + 60), .alreadyUsed)
        XCTAssertEqual(reopened.claim(.loginState, key: "damaged", expiresAt: clock.now + 60), .claimed)
        XCTAssertTrue(reopened.openingNotes.contains { $0.contains("CORRUPT record at offset \(damagedRecordStart)") },
                      "\(reopened.openingNotes)")
        let copy = "store.corrupt-\(clock.now)"
        XCTAssertEqual(Files.names(in: directory.path), ["store", copy])
        XCTAssertEqual(Files.read(directory.file(copy)), bytes)
        XCTAssertEqual(Files.mode(directory.file(copy)), 0o600)
        reopened.close()
        XCTAssertEqual(try open().openingNotes, [])  // rewritten clean
    }

    /// Damage after which no record boundary can be trusted stops the replay there.
    func testADestroyedLengthInTheMiddleStopsReplayThere() throws {
        let store = try open()
        try writeBase(store)
        let damagedRecordStart = Files.size(path)
        XCTAssertEqual(store.claim(.loginState, key: "damaged", expiresAt: clock.now + 60), .claimed)
        XCTAssertEqual(store.claim(.loginState, key: "after", expiresAt: clock.now + 60), .claimed)
        store.close()
        var bytes = Files.read(path)
        bytes.replaceSubrange(damagedRecordStart..<damagedRecordStart + 4, with: [0xFF, 0xFF, 0xFF, 0x7F])
        Files.write(bytes, to: path)

        let reopened = try open()
        try assertBase(reopened)
        XCTAssertEqual(reopened.claim(.loginState, key: "after", expiresAt: clock.now + 60), .claimed)  // lost
        XCTAssertTrue(reopened.openingNotes.contains { $0.contains("CORRUPT data at offset \(damagedRecordStart)") },
                      "\(reopened.openingNotes)")
        XCTAssertEqual(Files.read(directory.file("store.corrupt-\(clock.now)")), bytes)
    }

    /// Not a store file: a clear error naming the path, and the file exactly as it was.
    func testAForeignFileIsRefusedAndLeftUntouched() throws {
        var random = SystemRandomNumberGenerator()
        let foreign: [(String, [UInt8])] = [
            ("yaml", Array("revocations:\n  store: file:/var/lib/sidecar/store\n".utf8)),
            ("random", (0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) }),
            ("header prefix", Array("SIWA-SIDE".utf8)),
            ("one byte", [0x53]),
        ]
        for (name, contents) in foreign {
            Files.write(contents, to: path)
            XCTAssertThrowsError(try open(), name) { error in
                XCTAssertEqual(error as? StoreError, .foreignFile(path: path))
                XCTAssertTrue("\(error)".contains(path))
            }
            XCTAssertEqual(Files.read(path), contents, name)
            XCTAssertEqual(Files.names(in: directory.path), ["store"], name)
        }
        let future = Array("SIWA-SIDECAR-STORE/2\n".utf8) + [1, 2, 3]
        Files.write(future, to: path)
        XCTAssertThrowsError(try open()) { XCTAssertEqual($0 as? StoreError, .unsupportedVersion(path: path, version: "2")) }
        XCTAssertEqual(Files.read(path), future)
    }

    /// An empty file (made by hand, say with `touch`) holds nothing to lose: it becomes a store.
    func testAnEmptyFileBecomesAStore() throws {
        Files.write([], to: path)
        let store = try open()
        XCTAssertEqual(Files.read(path), LogFile.header)
        XCTAssertEqual(store.claim(.loginState, key: "x", expiresAt: clock.now + 1), .claimed)
    }

    func testAMissingDirectoryOrADirectoryPathIsAClearError() throws {
        let missing = directory.file("no-such-dir/store")
        XCTAssertThrowsError(try FileStore(path: missing)) { error in
            XCTAssertEqual(error as? StoreError, .directoryMissing(path: missing))
            XCTAssertTrue("\(error)".contains(missing))
        }
        XCTAssertThrowsError(try FileStore(path: directory.path)) {
            XCTAssertEqual($0 as? StoreError, .notARegularFile(path: directory.path))
        }
    }

    /// Two stores on one file (two processes by mistake) would interleave appends.
    func testASecondOpenOfTheSameFileIsRefused() throws {
        let first = try open()
        XCTAssertThrowsError(try open()) { error in
            XCTAssertEqual(error as? StoreError, .locked(path: path))
            XCTAssertTrue("\(error)".contains(path))
        }
        try first.compact()  // the lock moves to the rewritten file
        XCTAssertThrowsError(try open()) { XCTAssertEqual($0 as? StoreError, .locked(path: path)) }
        first.close()
        XCTAssertNoThrow(try open())
    }

    /// A write that fails half-way (here: the file size limit) leaves no partial record:
    /// the file is cut back, the store says it is degraded, and the next change works.
    func testAFailedAppendIsRolledBack() throws {
        let store = try open()
        try writeBase(store)
        let before = Files.read(path)

        let previousHandler = signal(SIGXFSZ, SIG_IGN)
        var saved = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved)
        var limited = rlimit(rlim_cur: rlim_t(before.count + 20), rlim_max: saved.rlim_max)
        setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limited)
        XCTAssertThrowsError(try store.enqueueForward(payload: [UInt8](repeating: 7, count: 200))) { error in
            guard case .io(_, "write", EFBIG) = error as? StoreError else { return XCTFail("\(error)") }
        }
        setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &saved)
        signal(SIGXFSZ, previousHandler)

        XCTAssertEqual(Files.read(path), before)
        guard case .degraded = store.health.state else { return XCTFail("\(store.health)") }
        XCTAssertEqual(store.metrics.writeFailures, 1)
        XCTAssertEqual(try store.pendingForwards().count, 1)
        XCTAssertEqual(store.claim(.loginState, key: "next", expiresAt: clock.now + 60), .claimed)
        XCTAssertEqual(store.health.state, .ready)
        store.close()
        let reopened = try open()
        XCTAssertEqual(reopened.openingNotes, [])
        try assertBase(reopened)
    }
}
