/// Why a request or response head was refused. `status` is the answer a server gives a
/// client for a bad request head; a proxy answers 502 for a bad upstream response head.
public enum HTTPHeadError: Error, Sendable, Hashable {
    /// No end of head within `maxHeadBytes` (431).
    case headTooLarge
    /// More than `maxFields` header lines (431).
    case tooManyFields
    /// LF not preceded by CR anywhere in the head.
    case bareLF
    /// CR not followed by LF.
    case bareCR
    /// NUL, DEL or another control character (HTAB is allowed in values only).
    case controlCharacter
    /// A line starting with SP or HTAB (obsolete line folding).
    case obsFold
    /// SP or HTAB between a field name and its colon.
    case whitespaceBeforeColon
    /// Empty field name, a non-tchar in it, or no colon.
    case invalidFieldName
    /// Request line that is not `method SP target SP version`.
    case malformedRequestLine
    /// Status line that is not `HTTP/1.x SP 3DIGIT [SP reason]`.
    case malformedStatusLine
    /// Request target not valid for its form (or for the method).
    case invalidTarget
    /// CONNECT is not offered by this server (405).
    case connectNotAllowed
    /// Well-formed `HTTP/x.y` other than 1.0 and 1.1 (505).
    case unsupportedVersion
    /// Both Content-Length and Transfer-Encoding.
    case contentLengthWithTransferEncoding
    /// Content-Length that is not a plain decimal number, or overflows.
    case invalidContentLength
    /// Several Content-Length values that differ.
    case conflictingContentLength
    /// Transfer-Encoding other than exactly one `chunked`, or any in HTTP/1.0.
    case unsupportedTransferEncoding
    /// HTTP/1.1 request without Host.
    case missingHost
    /// More than one Host field.
    case multipleHost
    /// Host value with characters no authority can contain.
    case invalidHost

    /// The status a server answers a client with.
    public var status: Int {
        switch self {
        case .headTooLarge, .tooManyFields: return 431
        case .connectNotAllowed: return 405
        case .unsupportedVersion: return 505
        default: return 400
        }
    }
}
