extension PageText {
    var brazilianPortuguese: String {
        switch self {
        case .statusLabel: "Status"
        case .reasonLabel: "Motivo"
        case .requestIDLabel: "ID da solicitação"
        case .signInWithApple: "Iniciar sessão com a Apple"
        case .signInAgain: "Iniciar sessão novamente"
        case .useAnotherAppleID: "Usar outro ID Apple"
        case .startNewSignIn: "Iniciar uma nova sessão"
        case .signOut: "Encerrar sessão"

        case .signInTitle: "Iniciar sessão"
        case .signInMessage: "Inicie sessão com seu ID Apple para continuar neste site."
        case .unauthorizedTitle: "É necessário iniciar sessão"
        case .unauthorizedMessage:
            "Esta página é só para quem iniciou sessão. Inicie sessão com seu ID Apple e tente novamente."
        case .signedOutTitle: "Sua sessão foi encerrada"
        case .signedOutMessage:
            "Sua sessão neste site foi encerrada neste navegador. Feche esta janela ou inicie sessão novamente para continuar."
        case .accountDeletedTitle: "Conta apagada"
        case .accountDeletedMessage:
            "Sua conta foi apagada e sua sessão foi encerrada em todos os dispositivos; este site não tem mais acesso ao seu ID Apple."
        case .storeUnavailableTitle: "Tente novamente"
        case .storeUnavailableMessage:
            "O serviço de início de sessão não conseguiu registrar esta etapa, então nada foi alterado. Tente novamente em instantes."
        case .ruleRefusedTitle: "Não disponível para sua conta"
        case .ruleRefusedMessage:
            "Você iniciou sessão, mas esta página não está aberta ao seu ID Apple. Peça acesso ao responsável pelo site ou inicie sessão com outro ID Apple."
        case .confirmSignOutTitle: "Encerrar sessão?"
        case .confirmSignOutMessage:
            "O link para encerrar a sessão veio de outro site, então não foi seguido. Use o botão para encerrar a sessão."

        case .notFoundTitle: "Página não encontrada"
        case .notFoundMessage:
            "Não há nenhuma página neste endereço. Confira o link ou volte à página inicial do site."
        case .methodNotAllowedTitle: "Não permitido aqui"
        case .methodNotAllowedMessage:
            "Este endereço não aceita esse tipo de solicitação. Volte e use os links e botões do próprio site."
        case .upstreamUnavailableTitle: "O site não está respondendo"
        case .upstreamUnavailableMessage:
            "Não foi possível acessar o aplicativo por trás desta página. Tente novamente em instantes."
        case .upstreamTimeoutTitle: "O site está demorando demais"
        case .upstreamTimeoutMessage:
            "O aplicativo por trás desta página não respondeu a tempo. Tente novamente em instantes."
        case .otherErrorTitle: "Algo deu errado"
        case .otherErrorMessage: "Não foi possível concluir esta solicitação. Tente novamente em instantes."

        case .accountNotDeletedTitle: "Conta não apagada"
        case .revocationFailedMessage:
            "A Apple não confirmou a revogação, então nada foi alterado. Tente novamente em instantes."
        case .deletionCrossSiteMessage:
            "A solicitação veio de outro site, então nada foi alterado. Apague sua conta pela própria página deste site."
        case .deletionNeedsSignInMessage:
            "Você não iniciou sessão, então não há conta para apagar. Inicie sessão primeiro e depois apague sua conta."

        case .policyDeniedTitle: "Você não tem permissão para iniciar sessão aqui"
        case .policyDeniedMessage:
            "Seu ID Apple não está na lista de contas permitidas deste site. Inicie sessão com outro ID Apple ou peça acesso ao responsável pelo site."
        case .appleTimeoutTitle: "A Apple não respondeu a tempo"
        case .appleUnavailableTitle: "Iniciar sessão com a Apple não está disponível no momento"
        case .appleFailedMessage:
            "A Apple não respondeu como esperado, então você não iniciou sessão. Tente novamente em instantes."
        case .internalErrorTitle: "O início de sessão falhou do nosso lado"
        case .internalErrorMessage:
            "Algo deu errado neste site, então você não iniciou sessão. Inicie uma nova sessão; se acontecer de novo, fale com o suporte informando os detalhes abaixo."
        case .signInNotRecordedMessage:
            "O serviço de início de sessão não conseguiu registrar esta etapa, então você não iniciou sessão. Inicie uma nova sessão em instantes."
        case .cancelledTitle: "Início de sessão cancelado"
        case .cancelledMessage: "Você cancelou o início de sessão com a Apple."
        case .notVerifiedTitle: "Não foi possível verificar o início de sessão"
        case .notVerifiedMessage:
            "A confirmação da Apple sobre quem você é não foi válida, então você não iniciou sessão. Inicie uma nova sessão."
        case .stateMissingTitle: "Este início de sessão não corresponde ao seu navegador"
        case .stateMissingMessage:
            "Seu navegador não enviou de volta o cookie deste início de sessão. Permita cookies para este site e inicie uma nova sessão."
        case .stateExpiredTitle: "Este início de sessão expirou"
        case .stateExpiredMessage:
            "Um início de sessão vale uma vez e por 10 minutos; este expirou ou já foi usado. Inicie uma nova sessão."
        case .incompleteTitle: "O início de sessão não foi concluído"
        case .incompleteMessage: "A resposta da Apple estava incompleta, então você não iniciou sessão. Inicie uma nova sessão."
        }
    }
}
