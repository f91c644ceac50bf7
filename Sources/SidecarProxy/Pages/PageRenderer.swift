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
/// the connection has one. Title and message are named texts, said in the page's language.
struct PageContent {
    var status: Int
    var title: PageText
    var message: PageText
    var reason: String
    /// Where a new sign-in starts (`{prefix}/login`, with `rd` when known); also the form
    /// target of `confirmSignOut`.
    var loginURL: [UInt8] = []
    var userName: String = ""
}

/// The one renderer of the sidecar's pages: each page's template parsed once (built-in or
/// the operator's) and bound to each language, its headers and texts precomputed, and a
/// response composed by splicing escaped values between literal bytes.
public final class PageRenderer: Sendable {
    struct Page: Sendable {
        let template: PageTemplate
        let contentSecurityPolicy: [UInt8]
        let contentLanguage: [UInt8]
    }

    private static let varyField = Array("Accept-Language".utf8)

    /// One per kind and language: `pages[kind * languages + language]`.
    private let pages: [Page]
    /// Every text, HTML-escaped: `texts[language * PageText.allCases.count + text]`.
    private let texts: [[UInt8]]
    /// `pages.language`: when `Accept-Language` names none of the pages' languages.
    public let defaultLanguage: PageLanguage
    /// `pages.language_override`: every page in this language, whatever the request asks.
    public let languageOverride: PageLanguage?
    /// The directory the operator's templates came from, for the start-up summary.
    public let templateDirectory: String?
    /// File names the operator replaced.
    public let replacedFiles: [String]

    /// The built-in pages only, in the browser's language or English.
    public static let builtIn = PageRenderer(operatorTemplates: [:], directory: nil)

    init(operatorTemplates: [String: PageTemplate], directory: String?, language: PageLanguage = .english,
         languageOverride: PageLanguage? = nil) {
        let languages = PageLanguage.allCases
        texts = languages.flatMap { language in
            PageText.allCases.map { Array(HTML.escape($0.text(in: language)).utf8) }
        }
        var pages: [Page] = []
        pages.reserveCapacity(PageKind.allCases.count * languages.count)
        for kind in PageKind.allCases {
            let operatorTemplate = operatorTemplates[kind.templateFile]
            for language in languages {
                let template = (operatorTemplate ?? BuiltInPages.template(kind, in: language)).binding { placeholder in
                    switch placeholder {
                    case .language: Array(language.tag.utf8)
                    case .direction: Array(language.direction.utf8)
                    case .signInWithApple: Array(HTML.escape(PageText.signInWithApple.text(in: language)).utf8)
                    default: nil
                    }
                }
                let csp = PageDesign.contentSecurityPolicy(styleHashes: template.styleHashes)
                pages.append(Page(
                    template: template, contentSecurityPolicy: Array(csp.utf8), contentLanguage: Array(language.tag.utf8)))
            }
        }
        self.pages = pages
        defaultLanguage = language
        self.languageOverride = languageOverride
        templateDirectory = directory
        replacedFiles = operatorTemplates.keys.sorted()
    }

    /// The pages' language for this request: the override, else the most preferred of the
    /// request's `Accept-Language` the pages are written in, else the default. `varies`: the
    /// answer depends on `Accept-Language` (so caches must key on it).
    func language(for head: HTTPRequestHead) -> (language: PageLanguage, varies: Bool) {
        if let languageOverride { return (languageOverride, false) }
        let chosen = PageLanguage.lookup.choose(head.values("accept-language").lazy.map { head.bytes($0) })
        return (chosen.map(PageLanguage.init(index:)) ?? defaultLanguage, true)
    }

    func render(_ kind: PageKind, _ content: PageContent, for head: HTTPRequestHead) -> LocalResponse {
        let (language, varies) = language(for: head)
        var answer = render(kind, content, in: language)
        if varies { answer.extraFields.append(("Vary", Self.varyField)) }
        return answer
    }

    func render(_ kind: PageKind, _ content: PageContent, in language: PageLanguage) -> LocalResponse {
        let languageCount = PageLanguage.allCases.count
        let page = pages[PageKind.allCases.firstIndex(of: kind)! * languageCount + language.index]
        let textBase = language.index * PageText.allCases.count
        var body: [UInt8] = []
        body.reserveCapacity(8192)
        var offsets: [Int] = []
        for segment in page.template.segments {
            switch segment {
            case .literal(let bytes): body.append(contentsOf: bytes)
            case .placeholder(let placeholder):
                switch placeholder {
                case .status: Self.appendEscaped(String(content.status).utf8, to: &body)
                case .title: body.append(contentsOf: texts[textBase + content.title.rawValue])
                case .message: body.append(contentsOf: texts[textBase + content.message.rawValue])
                case .reason: Self.appendEscaped(content.reason.utf8, to: &body)
                case .loginURL: Self.appendEscaped(content.loginURL, to: &body)
                case .userName: Self.appendEscaped(content.userName.utf8, to: &body)
                case .requestId: offsets.append(body.count)
                case .language, .direction, .signInWithApple: break  // bound per language at start
                }
            }
        }
        return LocalResponse(
            status: content.status, reason: AuthPages.reasonPhrase(content.status), contentType: "text/html; charset=utf-8",
            body: body, extraFields: [
                ("Content-Security-Policy", page.contentSecurityPolicy), ("Content-Language", page.contentLanguage),
            ],
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
