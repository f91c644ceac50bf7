extension PageText {
    var japanese: String {
        switch self {
        case .statusLabel: "ステータス"
        case .reasonLabel: "理由"
        case .requestIDLabel: "リクエストID"
        case .signInWithApple: "Appleでサインイン"
        case .signInAgain: "もう一度サインイン"
        case .useAnotherAppleID: "別のApple IDを使用"
        case .startNewSignIn: "サインインをやり直す"
        case .signOut: "サインアウト"

        case .signInTitle: "サインイン"
        case .signInMessage: "このサイトを利用するには、Apple IDでサインインしてください。"
        case .unauthorizedTitle: "サインインが必要です"
        case .unauthorizedMessage:
            "このページはサインインした人だけが利用できます。Apple IDでサインインしてから、もう一度お試しください。"
        case .signedOutTitle: "サインアウトしました"
        case .signedOutMessage:
            "このブラウザでこのサイトからサインアウトしました。このウインドウを閉じるか、続けるにはもう一度サインインしてください。"
        case .accountDeletedTitle: "アカウントを削除しました"
        case .accountDeletedMessage:
            "アカウントを削除し、すべてのデバイスでサインアウトしました。このサイトはもうあなたのApple IDにアクセスできません。"
        case .storeUnavailableTitle: "もう一度お試しください"
        case .storeUnavailableMessage:
            "サインインサービスがこの手順を記録できなかったため、何も変更されていません。しばらくしてからもう一度お試しください。"
        case .ruleRefusedTitle: "このアカウントでは利用できません"
        case .ruleRefusedMessage:
            "サインインしていますが、このページはあなたのApple IDには公開されていません。サイトの管理者にアクセスを依頼するか、別のApple IDでサインインしてください。"
        case .confirmSignOutTitle: "サインアウトしますか？"
        case .confirmSignOutMessage:
            "サインアウトのリンクが別のサイトからのものだったため、実行していません。サインアウトするにはボタンを使ってください。"

        case .notFoundTitle: "ページが見つかりません"
        case .notFoundMessage: "このアドレスにページはありません。リンクを確認するか、サイトのトップページに戻ってください。"
        case .methodNotAllowedTitle: "ここでは許可されていません"
        case .methodNotAllowedMessage:
            "このアドレスはその種類のリクエストを受け付けません。前のページに戻り、サイトのリンクやボタンを使ってください。"
        case .upstreamUnavailableTitle: "サイトが応答していません"
        case .upstreamUnavailableMessage: "このページのアプリケーションに接続できませんでした。しばらくしてからもう一度お試しください。"
        case .upstreamTimeoutTitle: "サイトの応答に時間がかかっています"
        case .upstreamTimeoutMessage: "このページのアプリケーションが時間内に応答しませんでした。しばらくしてからもう一度お試しください。"
        case .otherErrorTitle: "問題が発生しました"
        case .otherErrorMessage: "このリクエストを完了できませんでした。しばらくしてからもう一度お試しください。"

        case .accountNotDeletedTitle: "アカウントは削除されていません"
        case .revocationFailedMessage:
            "Appleが取り消しを確認しなかったため、何も変更されていません。しばらくしてからもう一度お試しください。"
        case .deletionCrossSiteMessage:
            "リクエストが別のサイトからのものだったため、何も変更されていません。アカウントはこのサイトのページから削除してください。"
        case .deletionNeedsSignInMessage:
            "サインインしていないため、削除するアカウントがありません。先にサインインしてから、アカウントを削除してください。"

        case .policyDeniedTitle: "このサイトにはサインインできません"
        case .policyDeniedMessage:
            "あなたのApple IDは、このサイトで許可されたアカウントの一覧にありません。別のApple IDでサインインするか、サイトの管理者にアクセスを依頼してください。"
        case .appleTimeoutTitle: "Appleが時間内に応答しませんでした"
        case .appleUnavailableTitle: "現在、Appleでサインインを利用できません"
        case .appleFailedMessage:
            "Appleから想定どおりの応答がなかったため、サインインしていません。しばらくしてからもう一度お試しください。"
        case .internalErrorTitle: "こちら側の問題でサインインできませんでした"
        case .internalErrorMessage:
            "このサイトで問題が発生したため、サインインしていません。サインインをやり直してください。再び起きる場合は、下記の詳細を添えてサポートに連絡してください。"
        case .signInNotRecordedMessage:
            "サインインサービスがこの手順を記録できなかったため、サインインしていません。しばらくしてからサインインをやり直してください。"
        case .cancelledTitle: "サインインをキャンセルしました"
        case .cancelledMessage: "Appleでのサインインをキャンセルしました。"
        case .notVerifiedTitle: "サインインを確認できませんでした"
        case .notVerifiedMessage:
            "Appleによる本人確認が正しくなかったため、サインインしていません。サインインをやり直してください。"
        case .stateMissingTitle: "このサインインはお使いのブラウザと一致しません"
        case .stateMissingMessage:
            "ブラウザがこのサインインのCookieを返しませんでした。このサイトのCookieを許可してから、サインインをやり直してください。"
        case .stateExpiredTitle: "このサインインは期限切れです"
        case .stateExpiredMessage:
            "サインインは1回だけ、10分間有効です。このサインインは期限切れか、すでに使用されています。サインインをやり直してください。"
        case .incompleteTitle: "サインインが完了しませんでした"
        case .incompleteMessage: "Appleからの応答が不完全だったため、サインインしていません。サインインをやり直してください。"
        }
    }
}
