extension PageText {
    var korean: String {
        switch self {
        case .statusLabel: "상태"
        case .reasonLabel: "사유"
        case .requestIDLabel: "요청 ID"
        case .signInWithApple: "Apple로 로그인"
        case .signInAgain: "다시 로그인"
        case .useAnotherAppleID: "다른 Apple ID 사용"
        case .startNewSignIn: "다시 로그인하기"
        case .signOut: "로그아웃"

        case .signInTitle: "로그인"
        case .signInMessage: "이 사이트를 계속 이용하려면 Apple ID로 로그인하십시오."
        case .unauthorizedTitle: "로그인이 필요합니다"
        case .unauthorizedMessage: "이 페이지는 로그인한 사람만 이용할 수 있습니다. Apple ID로 로그인한 다음 다시 시도하십시오."
        case .signedOutTitle: "로그아웃되었습니다"
        case .signedOutMessage:
            "이 브라우저에서 이 사이트로부터 로그아웃되었습니다. 이 창을 닫거나, 계속하려면 다시 로그인하십시오."
        case .accountDeletedTitle: "계정이 삭제되었습니다"
        case .accountDeletedMessage:
            "계정이 삭제되었고 모든 기기에서 로그아웃되었습니다. 이 사이트는 더 이상 사용자의 Apple ID에 접근할 수 없습니다."
        case .storeUnavailableTitle: "다시 시도하십시오"
        case .storeUnavailableMessage:
            "로그인 서비스가 이 단계를 기록하지 못해 아무것도 변경되지 않았습니다. 잠시 후 다시 시도하십시오."
        case .ruleRefusedTitle: "이 계정에는 열려 있지 않습니다"
        case .ruleRefusedMessage:
            "로그인되어 있지만 이 페이지는 사용자의 Apple ID에 열려 있지 않습니다. 사이트 관리자에게 접근 권한을 요청하거나 다른 Apple ID로 로그인하십시오."
        case .confirmSignOutTitle: "로그아웃하시겠습니까?"
        case .confirmSignOutMessage:
            "로그아웃 링크가 다른 사이트에서 왔기 때문에 실행하지 않았습니다. 로그아웃하려면 버튼을 사용하십시오."

        case .notFoundTitle: "페이지를 찾을 수 없습니다"
        case .notFoundMessage: "이 주소에는 페이지가 없습니다. 링크를 확인하거나 사이트의 첫 페이지로 돌아가십시오."
        case .methodNotAllowedTitle: "여기서는 허용되지 않습니다"
        case .methodNotAllowedMessage:
            "이 주소는 그런 종류의 요청을 받지 않습니다. 이전 페이지로 돌아가 사이트의 링크와 버튼을 사용하십시오."
        case .upstreamUnavailableTitle: "사이트가 응답하지 않습니다"
        case .upstreamUnavailableMessage: "이 페이지의 애플리케이션에 연결할 수 없었습니다. 잠시 후 다시 시도하십시오."
        case .upstreamTimeoutTitle: "사이트 응답이 너무 늦습니다"
        case .upstreamTimeoutMessage: "이 페이지의 애플리케이션이 제시간에 응답하지 않았습니다. 잠시 후 다시 시도하십시오."
        case .otherErrorTitle: "문제가 발생했습니다"
        case .otherErrorMessage: "이 요청을 완료할 수 없었습니다. 잠시 후 다시 시도하십시오."

        case .accountNotDeletedTitle: "계정이 삭제되지 않았습니다"
        case .revocationFailedMessage: "Apple이 철회를 확인하지 않아 아무것도 변경되지 않았습니다. 잠시 후 다시 시도하십시오."
        case .deletionCrossSiteMessage:
            "요청이 다른 사이트에서 왔기 때문에 아무것도 변경되지 않았습니다. 이 사이트의 페이지에서 계정을 삭제하십시오."
        case .deletionNeedsSignInMessage:
            "로그인하지 않았으므로 삭제할 계정이 없습니다. 먼저 로그인한 다음 계정을 삭제하십시오."

        case .policyDeniedTitle: "이 사이트에 로그인할 수 없습니다"
        case .policyDeniedMessage:
            "사용자의 Apple ID가 이 사이트에서 허용된 계정 목록에 없습니다. 다른 Apple ID로 로그인하거나 사이트 관리자에게 접근 권한을 요청하십시오."
        case .appleTimeoutTitle: "Apple이 제시간에 응답하지 않았습니다"
        case .appleUnavailableTitle: "지금은 Apple로 로그인을 사용할 수 없습니다"
        case .appleFailedMessage: "Apple이 예상대로 응답하지 않아 로그인되지 않았습니다. 잠시 후 다시 시도하십시오."
        case .internalErrorTitle: "사이트 측 문제로 로그인하지 못했습니다"
        case .internalErrorMessage:
            "이 사이트에 문제가 발생해 로그인되지 않았습니다. 다시 로그인하십시오. 같은 문제가 반복되면 아래 세부 정보와 함께 지원팀에 문의하십시오."
        case .signInNotRecordedMessage:
            "로그인 서비스가 이 단계를 기록하지 못해 로그인되지 않았습니다. 잠시 후 다시 로그인하십시오."
        case .cancelledTitle: "로그인이 취소되었습니다"
        case .cancelledMessage: "Apple로 로그인을 취소했습니다."
        case .notVerifiedTitle: "로그인을 확인할 수 없습니다"
        case .notVerifiedMessage: "Apple의 본인 확인이 올바르지 않아 로그인되지 않았습니다. 다시 로그인하십시오."
        case .stateMissingTitle: "이 로그인은 사용 중인 브라우저와 일치하지 않습니다"
        case .stateMissingMessage:
            "브라우저가 이 로그인의 쿠키를 돌려보내지 않았습니다. 이 사이트의 쿠키를 허용한 다음 다시 로그인하십시오."
        case .stateExpiredTitle: "이 로그인은 만료되었습니다"
        case .stateExpiredMessage:
            "로그인은 한 번만, 10분 동안 유효합니다. 이 로그인은 만료되었거나 이미 사용되었습니다. 다시 로그인하십시오."
        case .incompleteTitle: "로그인이 완료되지 않았습니다"
        case .incompleteMessage: "Apple의 응답이 불완전해 로그인되지 않았습니다. 다시 로그인하십시오."
        }
    }
}
