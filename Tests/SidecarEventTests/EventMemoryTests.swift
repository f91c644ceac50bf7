import CEventMemory
import Glibc
import XCTest

/// The per-thread block cache libevent allocates through (`sidecar_event_memory_*`).
final class EventMemoryTests: XCTestCase {
    private func fill(_ p: UnsafeMutableRawPointer, _ count: Int, _ seed: UInt8) {
        for i in 0..<count { p.storeBytes(of: seed &+ UInt8(truncatingIfNeeded: i), toByteOffset: i, as: UInt8.self) }
    }

    private func holds(_ p: UnsafeMutableRawPointer, _ count: Int, _ seed: UInt8) -> Bool {
        (0..<count).allSatisfy { p.load(fromByteOffset: $0, as: UInt8.self) == seed &+ UInt8(truncatingIfNeeded: $0) }
    }

    /// A freed chain-sized block is handed out again for the next block of its size class;
    /// small and large sizes are not kept.
    func testFreedBlocksOfAClassAreReused() throws {
        let before = sidecar_event_memory_cached_blocks()
        let first = try XCTUnwrap(sidecar_event_memory_malloc(1024))
        XCTAssertEqual(Int(bitPattern: first) % 16, 0, "malloc's alignment is kept")
        sidecar_event_memory_free(first)
        XCTAssertEqual(sidecar_event_memory_cached_blocks(), before + 1)
        let again = try XCTUnwrap(sidecar_event_memory_malloc(700))  // same class: 513...1024
        XCTAssertEqual(again, first)
        fill(again, 1024, 3)  // the class's whole capacity is usable
        XCTAssertTrue(holds(again, 1024, 3))
        sidecar_event_memory_free(again)
        for size in [1, 100, 256, 8193, 70_000] {
            let block = try XCTUnwrap(sidecar_event_memory_malloc(size))
            fill(block, size, 9)
            sidecar_event_memory_free(block)
        }
        XCTAssertEqual(sidecar_event_memory_cached_blocks(), before + 1)
        sidecar_event_memory_free(nil)
    }

    /// At most 64 blocks per size class are kept; the rest go back to malloc.
    func testTheCacheKeepsABoundedNumberOfBlocks() throws {
        let blocks = try (0..<200).map { _ in try XCTUnwrap(sidecar_event_memory_malloc(4096)) }
        let before = sidecar_event_memory_cached_blocks()
        for block in blocks { sidecar_event_memory_free(block) }
        XCTAssertLessThanOrEqual(sidecar_event_memory_cached_blocks() - before, 64)
        XCTAssertGreaterThan(sidecar_event_memory_cached_blocks(), before)
    }

    /// Resizing keeps the bytes: within a class, from one class to another, between cached
    /// and uncached sizes, and from nothing.
    func testReallocationKeepsTheBytes() throws {
        var block = try XCTUnwrap(sidecar_event_memory_realloc(nil, 300))
        fill(block, 300, 1)
        var kept = 300
        for size in [512, 600, 2000, 8192, 9000, 20_000, 5000, 100, 1500] {
            block = try XCTUnwrap(sidecar_event_memory_realloc(block, size))
            XCTAssertTrue(holds(block, min(kept, size), 1), "to \(size)")
            fill(block, size, 1)
            kept = size
        }
        sidecar_event_memory_free(block)
    }

    /// Each thread has its own cache: a block freed on a thread is not handed out on another.
    func testThreadsKeepTheirOwnBlocks() throws {
        let block = try XCTUnwrap(sidecar_event_memory_malloc(2048))
        sidecar_event_memory_free(block)
        // (blocks cached on the new thread when it began, the block it was given)
        let seen = UnsafeMutablePointer<(Int, UnsafeMutableRawPointer?)>.allocate(capacity: 1)
        defer { seen.deallocate() }
        seen.initialize(to: (-1, nil))
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            let seen = context!.assumingMemoryBound(to: (Int, UnsafeMutableRawPointer?).self)
            seen.pointee.0 = sidecar_event_memory_cached_blocks()
            seen.pointee.1 = sidecar_event_memory_malloc(2048)
            sidecar_event_memory_free(seen.pointee.1)  // kept by this thread until it exits
            return nil
        }, seen)
        XCTAssertEqual(started, 0)
        XCTAssertEqual(pthread_join(thread, nil), 0)
        XCTAssertEqual(seen.pointee.0, 0)
        XCTAssertNotEqual(seen.pointee.1, block)
        XCTAssertEqual(sidecar_event_memory_malloc(2048), block)
    }
}
