import SidecarEvent
import SidecarHTTP
import XCTest

@testable import SidecarProxy

/// The parts an exchange keeps inline, each on its own: the upstream leg's queue accounting
/// and replay copy, the slow client's send bound, the spans' clock.
final class ExchangePartsTests: XCTestCase {
    func testTheQueueCountsAgainstTheAllowanceOnceAndIsLeftOnce() {
        let allowance = UpstreamAllowance(limit: 2)
        var leg = UpstreamLeg()
        leg.enterQueue(fresh: true, allowance: allowance)
        XCTAssertEqual(leg.wait, .waitingFresh)
        XCTAssertEqual(allowance.waiting, 1)
        leg.leaveQueue(allowance: allowance)
        leg.leaveQueue(allowance: allowance)  // given up after the worker's pass took it off
        XCTAssertEqual(leg.wait, .none)
        XCTAssertEqual(allowance.waiting, 0, "left once, counted back once")
    }

    func testAReplayCopyLeavesTheBodyInTheInput() throws {
        let input = try XCTUnwrap(ByteQueue.allocate())
        defer { input.deallocate() }
        XCTAssertTrue(input.append(Array("abcdefGET".utf8)))
        var leg = UpstreamLeg()
        leg.keepForReplay(6, from: input)
        XCTAssertEqual(leg.replayBody, Array("abcdef".utf8))
        XCTAssertEqual(input.count, 9, "the body is still relayed from the input")
        leg.reset()
        XCTAssertNil(leg.replayBody)
        XCTAssertNil(leg.detach())
    }

    func testAClientThatTakesAnyBytesRestartsItsSendBound() {
        var watch = ClientSendWatch()
        watch.start(written: 100, nowMs: 1_000)
        XCTAssertEqual(watch.stalledMs(written: 100, nowMs: 1_400), 400)
        XCTAssertEqual(watch.stalledMs(written: 101, nowMs: 1_500), 0, "it read a byte: a new bound")
        XCTAssertEqual(watch.stalledMs(written: 101, nowMs: 2_500), 1_000)
    }

    func testAnUpstreamSpanIsRecordedOnlyForAnExchangeThatReachedForOne() {
        let trace = TraceContext.starting(traceIdHigh: 1, traceIdLow: 2, spanId: 3)
        var spans = ExchangeSpans()
        spans.upstreamStarting()
        XCTAssertFalse(spans.isRecording, "no upstream span without the request's")
        spans.start()
        XCTAssertTrue(spans.isRecording)
        let local = spans.ended(trace: trace, method: .get, status: 200, failed: false, reachedUpstream: false) { 9 }
        XCTAssertNil(local.upstream)
        spans.upstreamStarting()
        let forwarded = spans.ended(trace: trace, method: .get, status: 502, failed: false, reachedUpstream: false) { 9 }
        let upstream = try? XCTUnwrap(forwarded.upstream)
        XCTAssertEqual(upstream?.spanId, 9)
        XCTAssertEqual(upstream?.parentId, 3)
        XCTAssertEqual(upstream?.failed, true, "it never answered")
        XCTAssertEqual(forwarded.request.status, 502)
    }
}
