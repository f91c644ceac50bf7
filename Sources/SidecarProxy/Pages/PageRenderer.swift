import SidecarHTTP

/// Which page. The operator's files replace pages by these names; the error
/// variants all come from `error.html` when the operator has one.
public enum PageKind: CaseIterable, Sendable {
    case signIn, signedOut, unauthorized, forbidden
    /// An error where starting a new sign-in helps (expired state, Apple down, …).
    case errorWithSignIn
    /// An error where it does not (405, the upstream down, …).
    case error
    /// A cross-site GET of the logout: a button that POSTs it instead.
    case confirmSignOut

    /// The operator's file for this page.
    var templateFile: String {
        switch self {
        case .signIn: "sign_in.html"
        case .signedOut: "signed_out.html"
        case .unauthorized: "unauthorized.html"
        case .forbidden: "forbidden.html"
        case .errorWithSignIn, .error, .confirmSignOut: "error.html"
        }
    }

    static let templateFiles = ["sign_in.html", "signed_out.html", "unauthorized.html", "forbidden.html", "error.html"]
}

/// What fills a page's placeholders. The request id is not here: it is spliced in as the
/// response is written (`LocalResponse.requestIdOffsets`), so pages can be composed before
/// the connection has one.
struct PageContent {
    var status: Int
    var title: String
    var message: String
    var reason: String
    /// Where a new sign-in starts (`{prefix}/login`, with `rd` when known); also the form
    /// target of `confirmSignOut`.
    var loginURL: [UInt8] = []
    var userName: String = ""
}

/// The one renderer of the sidecar's pages: each page's template parsed once (built-in or
/// the operator's), its headers precomputed, and a response composed by splicing escaped
/// values between literal bytes.
public final class PageRenderer: Sendable {
    struct Page: Sendable {
        let template: PageTemplate
        let contentSecurityPolicy: [UInt8]
    }

    private let pages: [Page]
    /// The directory the operator's templates came from, for the start-up summary.
    public let templateDirectory: String?
    /// File names the operator replaced.
    public let replacedFiles: [String]

    /// The built-in pages only.
    public static let builtIn = PageRenderer(operatorTemplates: [:], directory: nil)

    init(operatorTemplates: [String: PageTemplate], directory: String?) {
        pages = PageKind.allCases.map { kind in
            let template = operatorTemplates[kind.templateFile] ?? BuiltInPages.template(kind)
            let csp = PageDesign.contentSecurityPolicy(styleHashes: template.styleHashes)
            return Page(template: template, contentSecurityPolicy: Array(csp.utf8))
        }
        templateDirectory = directory
        replacedFiles = operatorTemplates.keys.sorted()
    }

    func render(_ kind: PageKind, _ content: PageContent) -> LocalResponse {
        let page = pages[PageKind.allCases.firstIndex(of: kind)!]
        var body: [UInt8] = []
        body.reserveCapacity(8192)
        var offsets: [Int] = []
        for segment in page.template.segments {
            switch segment {
            case .literal(let bytes): body.append(contentsOf: bytes)
            case .placeholder(let placeholder):
                switch placeholder {
                case .status: Self.appendEscaped(String(content.status).utf8, to: &body)
                case .title: Self.appendEscaped(content.title.utf8, to: &body)
                case .message: Self.appendEscaped(content.message.utf8, to: &body)
                case .reason: Self.appendEscaped(content.reason.utf8, to: &body)
                case .loginURL: Self.appendEscaped(content.loginURL, to: &body)
                case .userName: Self.appendEscaped(content.userName.utf8, to: &body)
                case .requestId: offsets.append(body.count)
                }
            }
        }
        return LocalResponse(
            status: content.status, reason: AuthPages.reasonPhrase(content.status), contentType: "text/html; charset=utf-8",
            body: body, extraFields: [("Content-Security-Policy", page.contentSecurityPolicy)],
            requestIdOffsets: offsets)
    }

    /// HTML text and attribute escaping (`&<>"'`), byte by byte: UTF-8 passes unchanged.
    static func appendEscaped(_ bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
        for b in bytes {
            switch b {
            case UInt8(ascii: "&"): out.append(contentsOf: [0x26, 0x61, 0x6D, 0x70, 0x3B])  // &amp;
            case UInt8(ascii: "<"): out.append(contentsOf: [0x26, 0x6C, 0x74, 0x3B])  // &lt;
            case UInt8(ascii: ">"): out.append(contentsOf: [0x26, 0x67, 0x74, 0x3B])  // &gt;
            case UInt8(ascii: "\""): out.append(contentsOf: [0x26, 0x71, 0x75, 0x6F, 0x74, 0x3B])  // &quot;
            case UInt8(ascii: "'"): out.append(contentsOf: [0x26, 0x23, 0x33, 0x39, 0x3B])  // &#39;
            default: out.append(b)
            }
        }
    }
}
