import SidecarConfig
import SidecarHTTP

/// The pages of each site (`sites.<name>.pages`): the renderer and the sign-in-page choice of
/// the site a request's host names, the top-level ones for any other. Looked up only where a
/// page is answered, never on a forwarded request.
public final class SitePages: Sendable {
    private let table: SiteTable?
    private let renderers: [PageRenderer]
    private let signInPages: [Bool]
    let topLevel: PageRenderer
    let topLevelSignIn: Bool

    /// `bySite`: each site's own renderer (nil: the top-level one), as `Config.sites` lists them.
    public init(_ config: Config, topLevel: PageRenderer, bySite: [PageRenderer?]) {
        self.topLevel = topLevel
        topLevelSignIn = config.pages.signIn
        renderers = zip(config.sites, bySite).map { $1 ?? topLevel }
        signInPages = config.sites.map { $0.pages?.signIn ?? config.pages.signIn }
        table = config.sites.contains { $0.pages != nil } ? SiteTable(config) : nil
    }

    /// The pages (and whether a browser without a session gets the sign-in page) of `head`'s site.
    func pages(for head: HTTPRequestHead) -> (renderer: PageRenderer, signIn: Bool) {
        guard let table else { return (topLevel, topLevelSignIn) }
        let site = head.withView { view in table.site(forHost: (head.authority ?? head.host).map { view[$0] }) }
        guard let site else { return (topLevel, topLevelSignIn) }
        return (renderers[site], signInPages[site])
    }
}
