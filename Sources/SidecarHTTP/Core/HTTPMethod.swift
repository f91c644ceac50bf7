/// Request method. Methods are case-sensitive tokens (RFC 9110 §9.1); unknown ones are `.other`
/// and their bytes are at `HTTPRequestHead.methodRange`.
public enum HTTPMethod: Sendable, Hashable {
    case get, head, post, put, delete, options, patch, trace, connect, other

    static func classify(_ buf: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> HTTPMethod {
        @inline(__always) func isExactly(_ s: StaticString) -> Bool {
            guard end - start == s.utf8CodeUnitCount else { return false }
            let p = s.utf8Start
            for i in 0..<(end - start) where buf[start + i] != p[i] { return false }
            return true
        }
        switch end - start {
        case 3: return isExactly("GET") ? .get : isExactly("PUT") ? .put : .other
        case 4: return isExactly("HEAD") ? .head : isExactly("POST") ? .post : .other
        case 5: return isExactly("PATCH") ? .patch : isExactly("TRACE") ? .trace : .other
        case 6: return isExactly("DELETE") ? .delete : .other
        case 7: return isExactly("OPTIONS") ? .options : isExactly("CONNECT") ? .connect : .other
        default: return .other
        }
    }
}
