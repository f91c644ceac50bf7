/// The one small design of every HTML page the sidecar and its emulator serve:
/// system fonts, readable on a phone, a dark variant, nothing fetched from elsewhere.
/// Here rather than in the proxy so the emulator's console (a layer below) looks the same.
///
/// The style sheet is a constant so each server hashes it once for its
/// `Content-Security-Policy` (`style-src 'sha256-…'`): no `'unsafe-inline'`, no nonce.
/// Pages must therefore use classes, never `style=` attributes. Spacing uses logical
/// properties, so a `dir="rtl"` page mirrors. Apple's button keeps its title at 43 % of its
/// height and on one line, as Apple draws it: narrow screens first get less padding, then a
/// 40 px button with a 17 px title, so the longest title (Arabic) fits a 320 px phone.
public enum PageDesign {
    public static let styleSheet = """
        :root{color-scheme:light dark;--bg:#f5f5f7;--card:#fff;--text:#1d1d1f;--muted:#6e6e73;--line:#d2d2d7;\
        --accent:#0066cc;--bad:#b3261e;--good:#1b7f3b}
        @media (prefers-color-scheme: dark){:root{--bg:#000;--card:#1c1c1e;--text:#f5f5f7;--muted:#a1a1a6;\
        --line:#3a3a3c;--accent:#2997ff;--bad:#ff6961;--good:#30d158}}
        *{box-sizing:border-box}
        html{-webkit-text-size-adjust:100%}
        body{margin:0;background:var(--bg);color:var(--text);line-height:1.5;\
        font:17px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI",system-ui,Roboto,"Helvetica Neue",Arial,sans-serif}
        main{max-width:34rem;margin:12vh auto 2rem;padding:2rem 1.5rem;background:var(--card);border-radius:18px;\
        border:1px solid var(--line);overflow-wrap:break-word}
        :lang(ko) main{word-break:keep-all}
        main.wide{max-width:52rem;margin-top:2rem}
        h1{font-size:1.6rem;line-height:1.25;margin:0 0 .75rem}
        h2{font-size:1.15rem;margin:1.75rem 0 .5rem}
        p{margin:.5rem 0 1rem}
        a{color:var(--accent)}
        code{font:.85em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere;direction:ltr;\
        unicode-bidi:isolate}
        .meta{color:var(--muted);font-size:.85rem;border-top:1px solid var(--line);padding-top:.75rem;margin-top:1.5rem}
        .meta span{display:inline-block;margin-inline-end:1rem}
        .actions{display:flex;flex-wrap:wrap;gap:.75rem;align-items:center;margin:1.25rem 0 .5rem}
        .button,button{display:inline-flex;align-items:center;justify-content:center;min-height:44px;padding:0 1.1rem;\
        border-radius:10px;border:1px solid var(--line);background:var(--card);color:var(--text);font:inherit;\
        font-weight:500;text-decoration:none;cursor:pointer}
        .button.primary,button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
        button.danger{color:var(--bad)}
        .apple{display:inline-flex;align-items:center;justify-content:center;gap:.4rem;min-width:140px;min-height:44px;\
        padding:.35rem 1.5rem;border-radius:8px;background:#000;color:#fff;border:1px solid #000;text-decoration:none;\
        font:500 19px/1.2 -apple-system,BlinkMacSystemFont,"Segoe UI",system-ui,sans-serif;letter-spacing:-.01em;\
        text-align:center;max-width:100%}
        .apple svg{width:20px;height:20px;fill:currentColor;flex:none;margin-top:-4px}
        @media (prefers-color-scheme: dark){.apple{background:#fff;color:#000;border-color:#fff}}
        @media (max-width:24rem){main{padding:1.5rem 1rem}.apple{padding-inline:1rem}}
        @media (max-width:22rem){.apple{min-height:40px;font-size:17px}}
        .status{font-weight:600}.status.bad{color:var(--bad)}.status.good{color:var(--good)}
        form{margin:0}
        label{display:block;margin:.5rem 0;font-size:.95rem}
        input,select{font:inherit;width:100%;min-height:40px;padding:.3rem .6rem;border-radius:8px;\
        border:1px solid var(--line);background:var(--bg);color:var(--text)}
        input[type=checkbox]{width:auto;min-height:0;margin-inline-end:.4rem}
        .grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(14rem,1fr));gap:.75rem}
        section{border-top:1px solid var(--line);margin-top:1.25rem}
        table{border-collapse:collapse;width:100%;font-size:.95rem}
        th,td{text-align:start;padding-block:.4rem;padding-inline:0 .5rem;border-bottom:1px solid var(--line);vertical-align:top}
        .notice{padding:.6rem .8rem;border-radius:10px;border:1px solid var(--line);background:var(--bg)}
        """

    /// Apple's logo (the shape of Apple's own "Sign in with Apple" buttons), drawn in the
    /// button's text colour so the black and the white button styles both work.
    public static let appleLogo = """
        <svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M12.152 6.896c-.948 0-2.415-1.078-3.96-1.04-2.04.027-3.91 1.183-4.961 3.014-2.117 3.675-.546 9.103 1.519 12.09 1.013 1.454 2.208 3.09 3.792 3.039 1.52-.065 2.09-.987 3.935-.987 1.831 0 2.35.987 3.96.948 1.637-.026 2.676-1.48 3.676-2.948 1.156-1.688 1.636-3.325 1.662-3.415-.039-.013-3.182-1.221-3.22-4.857-.026-3.04 2.48-4.494 2.597-4.559-1.429-2.09-3.623-2.324-4.39-2.376-2-.156-3.675 1.09-4.61 1.09zM15.53 3.83c.843-1.012 1.4-2.427 1.245-3.83-1.207.052-2.662.805-3.532 1.818-.78.896-1.454 2.338-1.273 3.714 1.338.104 2.715-.688 3.559-1.701"/></svg>
        """

    /// The page head up to and including `<body>`: `title` must already be escaped (or a
    /// template placeholder).
    /// `language` and `direction` likewise (a tag and `ltr`/`rtl`, or placeholders); without a
    /// direction the page has no `dir` (left to right).
    public static func head(title: String, language: String = "en", direction: String? = nil) -> String {
        """
        <!doctype html>
        <html lang="\(language)"\(direction.map { " dir=\"\($0)\"" } ?? "")><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>\(title)</title>
        <style>\(styleSheet)</style>
        </head><body>

        """
    }

    /// The `Content-Security-Policy` for pages whose only inline content is style elements
    /// with these base64 SHA-256 digests.
    public static func contentSecurityPolicy(styleHashes: [String]) -> String {
        let styles = styleHashes.isEmpty ? "'none'" : styleHashes.map { "'sha256-\($0)'" }.joined(separator: " ")
        return "default-src 'none'; style-src \(styles); img-src data:; form-action 'self'; base-uri 'none'; "
            + "frame-ancestors 'none'"
    }
}
