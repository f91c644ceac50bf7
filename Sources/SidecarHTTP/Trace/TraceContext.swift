/// W3C trace context (https://www.w3.org/TR/trace-context/) for one request: the trace it
/// belongs to, the span the sidecar opens in it, and whether the client's `tracestate`
/// travels on. Pure: the caller draws the ids, so this has no state and no clock.
public struct TraceContext: Sendable, Equatable {
    public var traceIdHigh: UInt64 = 0
    public var traceIdLow: UInt64 = 0
    /// The sidecar's own span: the parent-id of the `traceparent` sent upstream.
    public var spanId: UInt64 = 0
    /// The client's span (the continued `traceparent`'s parent-id); 0 in a trace started here.
    public var parentSpanId: UInt64 = 0
    public var flags: UInt8 = 0
    /// The client's `traceparent` was continued.
    public var continued = false
    /// The client's `tracestate` is forwarded: only with a continued trace, and only when it
    /// fits `maxTracestateBytes` and is a valid list (`TraceState`).
    public var forwardsTracestate = false

    /// `00-` + 32 + `-` + 16 + `-` + 2.
    public static let traceparentLength = 55
    /// A longer `tracestate` (all its fields together) is dropped rather than forwarded.
    public static let maxTracestateBytes = 512
    public static let sampled: UInt8 = 0x01

    public init() {}

    /// A new trace (no usable `traceparent`), with the sampling decision made for it.
    @inlinable public static func starting(
        traceIdHigh: UInt64, traceIdLow: UInt64, spanId: UInt64, sampled isSampled: Bool = true
    ) -> TraceContext {
        var trace = TraceContext()
        trace.traceIdHigh = traceIdHigh
        trace.traceIdLow = traceIdLow
        trace.spanId = spanId
        trace.flags = isSampled ? sampled : 0
        return trace
    }

    /// The sampled flag is set: spans of this trace are recorded.
    @inlinable public var isSampled: Bool { flags & TraceContext.sampled != 0 }

    /// The highest low half of a trace id that `ratio` samples: a new trace is sampled when
    /// its (random, never zero) low half is at most this, so 0 samples none and 1 all.
    public static func samplingThreshold(ratio: Double) -> UInt64 {
        guard ratio < 1 else { return .max }
        guard ratio > 0 else { return 0 }
        return UInt64(ratio * 18_446_744_073_709_551_616.0)
    }

    /// Continues `parent` with the sidecar's span `spanId`, keeping its flags.
    @inlinable public static func continuing(_ parent: TraceParent, spanId: UInt64, tracestate: Bool) -> TraceContext {
        var trace = TraceContext()
        trace.traceIdHigh = parent.traceIdHigh
        trace.traceIdLow = parent.traceIdLow
        trace.spanId = spanId
        trace.parentSpanId = parent.parentId
        trace.flags = parent.flags
        trace.continued = true
        trace.forwardsTracestate = tracestate
        return trace
    }

    /// Whether a trace was decided (a blank context has a zero trace id, which no valid one has).
    @inlinable public var isSet: Bool { traceIdHigh | traceIdLow != 0 }

    /// Writes the 32 lower-case hex digits of the trace id at `out`.
    @inlinable public func writeTraceId(to out: UnsafeMutableRawPointer) {
        out.storeBytes(of: Hex16.digits(traceIdHigh >> 32), toByteOffset: 0, as: UInt64.self)
        out.storeBytes(of: Hex16.digits(traceIdHigh & 0xffff_ffff), toByteOffset: 8, as: UInt64.self)
        out.storeBytes(of: Hex16.digits(traceIdLow >> 32), toByteOffset: 16, as: UInt64.self)
        out.storeBytes(of: Hex16.digits(traceIdLow & 0xffff_ffff), toByteOffset: 24, as: UInt64.self)
    }

    /// CRLF, `traceparent: ` and the value `writeTraceparent` writes.
    public static let traceparentFieldLength = 15 + traceparentLength

    /// Writes CRLF (ending the field before it), `traceparent: ` and the value sent upstream
    /// — `traceparentFieldLength` bytes, in place: every forwarded head has this field.
    @inlinable public func writeTraceparentField(to out: UnsafeMutableRawPointer) {
        let name: StaticString = "\r\ntraceparent: "
        out.copyMemory(from: name.utf8Start, byteCount: 15)
        writeTraceparent(to: out + 15)
    }

    /// Writes the `traceparent` value sent upstream (version 00, this trace, the sidecar's
    /// span, the flags) — `traceparentLength` bytes at `out`.
    @inlinable public func writeTraceparent(to out: UnsafeMutableRawPointer) {
        out.storeBytes(of: UInt8(ascii: "0"), toByteOffset: 0, as: UInt8.self)
        out.storeBytes(of: UInt8(ascii: "0"), toByteOffset: 1, as: UInt8.self)
        out.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 2, as: UInt8.self)
        writeTraceId(to: out + 3)
        out.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 35, as: UInt8.self)
        out.storeBytes(of: Hex16.digits(spanId >> 32), toByteOffset: 36, as: UInt64.self)
        out.storeBytes(of: Hex16.digits(spanId & 0xffff_ffff), toByteOffset: 44, as: UInt64.self)
        out.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 52, as: UInt8.self)
        out.storeBytes(of: HexDigit.lower(flags >> 4), toByteOffset: 53, as: UInt8.self)
        out.storeBytes(of: HexDigit.lower(flags & 0xf), toByteOffset: 54, as: UInt8.self)
    }
}

/// A client's `traceparent`, parsed strictly.
public struct TraceParent: Sendable, Equatable {
    public var traceIdHigh: UInt64
    public var traceIdLow: UInt64
    public var parentId: UInt64
    public var flags: UInt8

    public init(traceIdHigh: UInt64, traceIdLow: UInt64, parentId: UInt64, flags: UInt8) {
        self.traceIdHigh = traceIdHigh
        self.traceIdLow = traceIdLow
        self.parentId = parentId
        self.flags = flags
    }

    /// Version `00`: exactly `00-<32 hex>-<16 hex>-<2 hex>`, lower-case, ids not all zeros.
    /// A higher version (not `ff`): its first four fields read the same way, and anything
    /// after them must begin with `-` (the specification's forward compatibility). Only the
    /// sampled flag is kept, whatever the version: it is the one bit level 1 defines, and a
    /// bit passed on that the sidecar does not understand is a client's say in what the
    /// upstream's tracing does. Nil otherwise.
    public static func parse(_ value: UnsafeRawBufferPointer) -> TraceParent? {
        guard value.count >= TraceContext.traceparentLength,
              let version = byte(value, at: 0), version != 0xff,
              value[2] == UInt8(ascii: "-"), value[35] == UInt8(ascii: "-"), value[52] == UInt8(ascii: "-")
        else { return nil }
        if version == 0 {
            guard value.count == TraceContext.traceparentLength else { return nil }
        } else if value.count > TraceContext.traceparentLength, value[55] != UInt8(ascii: "-") {
            return nil
        }
        guard let high = word(value, at: 3), let low = word(value, at: 19), high | low != 0,
              let parent = word(value, at: 36), parent != 0,
              var flags = byte(value, at: 53)
        else { return nil }
        flags &= TraceContext.sampled
        return TraceParent(traceIdHigh: high, traceIdLow: low, parentId: parent, flags: flags)
    }

    /// Lower-case hex only: the specification's HEXDIGLC.
    @inline(__always) private static func digit(_ c: UInt8) -> UInt64? {
        switch c {
        case 0x30...0x39: UInt64(c &- 0x30)
        case 0x61...0x66: UInt64(c &- 0x61 &+ 10)
        default: nil
        }
    }

    private static func byte(_ value: UnsafeRawBufferPointer, at offset: Int) -> UInt8? {
        guard let high = digit(value[offset]), let low = digit(value[offset + 1]) else { return nil }
        return UInt8(high << 4 | low)
    }

    /// 16 hex digits from `offset`.
    private static func word(_ value: UnsafeRawBufferPointer, at offset: Int) -> UInt64? {
        var result: UInt64 = 0
        for i in offset..<offset + 16 {
            guard let d = digit(value[i]) else { return nil }
            result = result << 4 | d
        }
        return result
    }
}

/// Eight lower-case hex digits at once.
public enum Hex16 {
    /// The 8 hex digits of the low 32 bits of `value`, most significant first when the
    /// result is stored little-endian: each nibble spread into its own byte, then `0`–`9`
    /// or `a`–`f` added to all eight together.
    @inlinable @inline(__always) public static func digits(_ value: UInt64) -> UInt64 {
        var x = value & 0xffff_ffff
        x = (x | x << 16) & 0x0000_ffff_0000_ffff
        x = (x | x << 8) & 0x00ff_00ff_00ff_00ff
        x = (x | x << 4) & 0x0f0f_0f0f_0f0f_0f0f
        let letters = ((x &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        // `letters * 39` (from `9` + 1 to `a`) as shifts: bits that never overlap.
        x = x &+ 0x3030_3030_3030_3030 &+ (letters << 5 | letters << 2 | letters << 1 | letters)
        return x.bigEndian
    }
}

/// The trace context a request head carries.
public struct IncomingTrace: Sendable, Equatable {
    /// Its one valid `traceparent`; nil when there is none, more than one, or it is malformed.
    public var parent: TraceParent?
    /// It has `tracestate` fields, `maxTracestateBytes` or fewer together (joined by commas),
    /// that make one valid list (`TraceState`): what may be forwarded.
    public var tracestateFits = false

    public init(parent: TraceParent? = nil, tracestateFits: Bool = false) {
        self.parent = parent
        self.tracestateFits = tracestateFits
    }
}

extension HeadView {
    /// One pass over the fields: the `traceparent` (two of them are as good as none: which
    /// one the client meant is unknowable) and the combined size of the `tracestate` fields.
    public func incomingTrace() -> IncomingTrace {
        var parentField: ByteRange?
        var parents = 0
        var tracestateBytes = -1
        for field in fields {
            // Every request pays for this loop: most names miss on their length alone.
            let length = field.name.count
            if length == 11, ByteCompare.equalsLowercased(bytes, field.name, "traceparent") {
                parents += 1
                parentField = field.value
            } else if length == 10, !field.value.isEmpty, ByteCompare.equalsLowercased(bytes, field.name, "tracestate") {
                tracestateBytes += field.value.count + 1
            }
        }
        guard parents == 1, let parentField, let parent = TraceParent.parse(self[parentField]) else {
            return IncomingTrace()
        }
        // The list is read only when it could travel: a continued trace, within the size.
        return IncomingTrace(
            parent: parent,
            tracestateFits: tracestateBytes > 0 && tracestateBytes <= TraceContext.maxTracestateBytes
                && tracestateIsValid())
    }
}
