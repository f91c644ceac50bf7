import XCTest

@testable import SidecarHTTP

/// `Accept-Language` lookup (RFC 4647 §3.4): weights, shortening, the aliases of the pages'
/// languages, and hostile fields that must cost a bounded scan and choose nothing odd.
final class LanguageLookupTests: XCTestCase {
    private func chosen(_ fields: String...) -> PageLanguage? {
        PageLanguage.lookup.choose(fields.map { Array($0.utf8)[...] }).map(PageLanguage.init(index:))
    }

    func testTheMostPreferredKnownRangeWins() {
        XCTAssertEqual(chosen("ja"), .japanese)
        XCTAssertEqual(chosen("fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5"), .french)
        XCTAssertEqual(chosen("en;q=0.5, de"), .german, "weight, not position, first")
        XCTAssertEqual(chosen("de;q=0.8, fr;q=0.8"), .german, "among equal weights, the earlier")
        XCTAssertEqual(chosen("sv, nl;q=0.9, ko;q=0.1"), .korean, "unknown languages are passed over")
        XCTAssertEqual(chosen("sv", "it;q=0.3"), .italian, "several field lines are one list")
        XCTAssertNil(chosen("sv, nl"))
        XCTAssertNil(chosen(""))
        XCTAssertNil(chosen("*"), "§3.4: the wildcard is ignored in lookup (the default applies)")
    }

    func testRangesAreShortenedFromTheEnd() {
        XCTAssertEqual(chosen("de-DE-1996"), .german)
        XCTAssertEqual(chosen("en-Latn-US-x-private"), .english)
        XCTAssertEqual(chosen("es-419"), .spanish)
        XCTAssertEqual(chosen("ar-EG"), .arabic)
        XCTAssertEqual(chosen("he-IL"), .hebrew)
        XCTAssertEqual(chosen("HE-il"), .hebrew, "case-insensitive")
    }

    func testChineseAndPortugueseVariantsAndOldHebrew() {
        XCTAssertEqual(chosen("zh-TW"), .traditionalChinese)
        XCTAssertEqual(chosen("zh-HK"), .traditionalChinese)
        XCTAssertEqual(chosen("zh-Hant-TW"), .traditionalChinese)
        XCTAssertEqual(chosen("zh-CN"), .simplifiedChinese)
        XCTAssertEqual(chosen("zh-Hans-CN"), .simplifiedChinese)
        XCTAssertEqual(chosen("zh"), .simplifiedChinese)
        XCTAssertEqual(chosen("pt-BR"), .brazilianPortuguese)
        XCTAssertEqual(chosen("pt-PT"), .brazilianPortuguese, "the only Portuguese there is")
        XCTAssertEqual(chosen("iw-IL"), .hebrew)
    }

    func testWeightsFollowTheGrammar() {
        XCTAssertNil(chosen("de;q=0"), "weight 0: not acceptable")
        XCTAssertNil(chosen("de;q=0.000"))
        XCTAssertEqual(chosen("de;q=0.001"), .german)
        XCTAssertEqual(chosen("de;Q=0.5"), .german)
        XCTAssertEqual(chosen("de ; q=0.5 "), .german)
        XCTAssertEqual(chosen("de;q=1.000"), .german)
        for bad in ["de;q=1.5", "de;q=2", "de;q=-1", "de;q=0.5555", "de;q=", "de;q=.5", "de;q=0,5x", "de;q=1e3",
                    "de;q=0.5;x=1", "de;level=1", "de;q=nan", "de;q=0x1"] {
            XCTAssertNil(chosen(bad + ", xx"), bad)
            XCTAssertEqual(chosen(bad + ", ko;q=0.2"), .korean, "\(bad) is skipped, not the whole field")
        }
        XCTAssertEqual(LanguageLookup.weight(Array("0.5".utf8)[...]), 500)
        XCTAssertEqual(LanguageLookup.weight(Array("0.25".utf8)[...]), 250)
        XCTAssertEqual(LanguageLookup.weight(Array("1".utf8)[...]), 1000)
        XCTAssertNil(LanguageLookup.weight(Array("1.001".utf8)[...]))
    }

    func testMalformedRangesChooseNothing() {
        for bad in ["<script>alert(1)</script>", "ja\"><img src=x>", "ja\u{1}", "j\u{0}a", "ja\r\nX-Injected: 1",
                    "ja-", "-ja", "ja--JP", "123", "ja-JP-waytoolongsubtag", "日本語", "ja_JP", "ja JP", "\"ja\"",
                    "ja-*", "en-US;q=0.9;q=0.8"] {
            XCTAssertNil(chosen(bad), bad)
        }
        XCTAssertEqual(chosen("<b>, ja\u{7f}, ar;q=0.4"), .arabic)
    }

    /// A huge field, or one of thousands of ranges, is read only so far: what lies beyond the
    /// bounds never counts, however preferred.
    func testTheScanIsBounded() {
        let many = Array(repeating: "xx", count: LanguageLookup.maximumRanges).joined(separator: ",")
        XCTAssertNil(chosen(many + ",ja"), "the range after the first \(LanguageLookup.maximumRanges) is not read")
        XCTAssertEqual(chosen(many.dropLast(3) + ",ja"), .japanese)
        let padding = String(repeating: " ", count: LanguageLookup.maximumBytes)
        XCTAssertNil(chosen(padding + "ja"), "bytes after the first \(LanguageLookup.maximumBytes) are not read")
        XCTAssertNil(chosen(padding, "ja"), "the bound counts every field line together")
        XCTAssertEqual(chosen(",,,,,,,,ja"), .japanese, "empty list elements are not ranges")

        let huge = Array(repeating: UInt8(ascii: "a"), count: 8 << 20)[...]
        let start = ContinuousClock.now
        for _ in 0..<100 { XCTAssertNil(PageLanguage.lookup.choose([huge, huge])) }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1), "100 lookups of two 8 MiB fields")
        let commas = Array(repeating: UInt8(ascii: ","), count: 8 << 20)[...]
        XCTAssertNil(PageLanguage.lookup.choose([commas]))
    }

    func testEveryLanguageIsChosenByItsOwnTag() {
        for language in PageLanguage.allCases {
            XCTAssertEqual(chosen(language.tag), language)
            XCTAssertEqual(chosen(language.tag.uppercased() + ";q=0.9"), language)
        }
        XCTAssertEqual(PageLanguage.allCases.filter(\.isRightToLeft), [.arabic, .hebrew])
    }
}
