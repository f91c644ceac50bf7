/// Field lines already written or validated as `name: value` CRLF lines — a trailer section
/// `ChunkedDecoder` checked, identity fields rendered once for forwarding — read back one field
/// at a time for a codec that writes fields, not lines (HTTP/2).
public enum RenderedFields {
    /// Calls `emit` with each line's name and value (the value without its surrounding
    /// whitespace). A line without a colon is skipped (a validated block has none).
    public static func forEach(
        _ section: UnsafeRawBufferPointer, _ emit: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Void
    ) {
        var start = 0
        while start < section.count {
            var end = start
            while end < section.count, section[end] != ASCII.lf { end += 1 }
            let lineEnd = end > start && section[end - 1] == ASCII.cr ? end - 1 : end
            var colon = start
            while colon < lineEnd, section[colon] != ASCII.colon { colon += 1 }
            if colon < lineEnd {
                var valueStart = colon + 1
                var valueEnd = lineEnd
                while valueStart < valueEnd, ASCII.isOWS(section[valueStart]) { valueStart += 1 }
                while valueEnd > valueStart, ASCII.isOWS(section[valueEnd - 1]) { valueEnd -= 1 }
                emit(UnsafeRawBufferPointer(rebasing: section[start..<colon]),
                     UnsafeRawBufferPointer(rebasing: section[valueStart..<valueEnd]))
            }
            start = end + 1
        }
    }
}
