/// The languages the sidecar's pages are written in. The raw value is the BCP 47 tag the
/// pages carry (`lang`, `Content-Language`) and `pages.language` takes; here rather than in
/// the proxy so the configuration can check a tag without the renderer.
public enum PageLanguage: String, CaseIterable, Sendable {
    case english = "en"
    case german = "de"
    case french = "fr"
    case spanish = "es"
    case italian = "it"
    case brazilianPortuguese = "pt-BR"
    case japanese = "ja"
    case korean = "ko"
    case simplifiedChinese = "zh-Hans"
    case traditionalChinese = "zh-Hant"
    case arabic = "ar"
    case hebrew = "he"

    public var tag: String { rawValue }

    public var isRightToLeft: Bool { self == .arabic || self == .hebrew }

    /// `ltr` or `rtl`, for the `dir` attribute.
    public var direction: String { isRightToLeft ? "rtl" : "ltr" }

    /// The language ranges that choose this language in `Accept-Language`, beyond its tag:
    /// browsers send region tags for Chinese (`zh-TW`, `zh-CN`), bare `pt` and `zh` mean
    /// the only variant there is, and `iw` is Hebrew's withdrawn code that old Java still sends.
    var alsoChosenBy: [String] {
        switch self {
        case .brazilianPortuguese: ["pt"]
        case .simplifiedChinese: ["zh", "zh-CN", "zh-SG", "zh-MY"]
        case .traditionalChinese: ["zh-TW", "zh-HK", "zh-MO"]
        case .hebrew: ["iw"]
        default: []
        }
    }

    /// Every range above, for `LanguageLookup`.
    public static let lookup = LanguageLookup(allCases.flatMap { language in
        ([language.tag] + language.alsoChosenBy).map { (range: $0, choice: language.index) }
    })

    /// The language a lookup's choice stands for.
    public init(index: Int) { self = Self.allCases[index] }

    public var index: Int { Self.allCases.firstIndex(of: self)! }
}
