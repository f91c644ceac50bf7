extension PageText {
    var french: String {
        switch self {
        case .statusLabel: "Statut"
        case .reasonLabel: "Motif"
        case .requestIDLabel: "ID de requête"
        case .signInWithApple: "Connexion avec Apple"
        case .signInAgain: "Se reconnecter"
        case .useAnotherAppleID: "Utiliser un autre identifiant Apple"
        case .startNewSignIn: "Recommencer la connexion"
        case .signOut: "Se déconnecter"

        case .signInTitle: "Connexion"
        case .signInMessage: "Connectez-vous avec votre identifiant Apple pour accéder à ce site."
        case .unauthorizedTitle: "Connexion requise"
        case .unauthorizedMessage:
            "Cette page est réservée aux personnes connectées. Connectez-vous avec votre identifiant Apple, puis réessayez."
        case .signedOutTitle: "Vous êtes déconnecté"
        case .signedOutMessage:
            "Vous êtes déconnecté de ce site dans ce navigateur. Fermez cette fenêtre, ou reconnectez-vous pour continuer."
        case .accountDeletedTitle: "Compte supprimé"
        case .accountDeletedMessage:
            "Votre compte a été supprimé et vous êtes déconnecté sur tous vos appareils ; ce site n’a plus accès à votre identifiant Apple."
        case .storeUnavailableTitle: "Veuillez réessayer"
        case .storeUnavailableMessage:
            "Le service de connexion n’a pas pu enregistrer cette étape ; rien n’a été modifié. Réessayez dans un instant."
        case .ruleRefusedTitle: "Non accessible à votre compte"
        case .ruleRefusedMessage:
            "Vous êtes connecté, mais cette page n’est pas ouverte à votre identifiant Apple. Demandez l’accès au responsable du site, ou connectez-vous avec un autre identifiant Apple."
        case .confirmSignOutTitle: "Se déconnecter ?"
        case .confirmSignOutMessage:
            "Le lien de déconnexion venait d’un autre site ; il n’a donc pas été suivi. Utilisez le bouton pour vous déconnecter."

        case .notFoundTitle: "Page introuvable"
        case .notFoundMessage:
            "Il n’y a aucune page à cette adresse. Vérifiez le lien, ou revenez à la page d’accueil du site."
        case .methodNotAllowedTitle: "Action non autorisée ici"
        case .methodNotAllowedMessage:
            "Cette adresse n’accepte pas ce type de requête. Revenez en arrière et utilisez les liens et boutons du site."
        case .upstreamUnavailableTitle: "Le site ne répond pas"
        case .upstreamUnavailableMessage:
            "L’application derrière cette page est injoignable. Réessayez dans un instant."
        case .upstreamTimeoutTitle: "Le site met trop de temps à répondre"
        case .upstreamTimeoutMessage:
            "L’application derrière cette page n’a pas répondu à temps. Réessayez dans un instant."
        case .otherErrorTitle: "Un problème est survenu"
        case .otherErrorMessage: "Cette requête n’a pas pu aboutir. Réessayez dans un instant."

        case .accountNotDeletedTitle: "Compte non supprimé"
        case .revocationFailedMessage:
            "Apple n’a pas confirmé la révocation ; rien n’a été modifié. Réessayez dans un instant."
        case .deletionCrossSiteMessage:
            "La demande venait d’un autre site ; rien n’a été modifié. Supprimez votre compte depuis la page de ce site."
        case .deletionNeedsSignInMessage:
            "Vous n’êtes pas connecté : il n’y a donc aucun compte à supprimer. Connectez-vous d’abord, puis supprimez votre compte."

        case .policyDeniedTitle: "Vous ne pouvez pas vous connecter ici"
        case .policyDeniedMessage:
            "Votre identifiant Apple ne figure pas dans la liste des comptes autorisés de ce site. Connectez-vous avec un autre identifiant Apple, ou demandez l’accès au responsable du site."
        case .appleTimeoutTitle: "Apple n’a pas répondu à temps"
        case .appleUnavailableTitle: "Connexion avec Apple est indisponible pour le moment"
        case .appleFailedMessage:
            "Apple n’a pas répondu comme prévu ; vous n’êtes donc pas connecté. Réessayez dans un instant."
        case .internalErrorTitle: "La connexion a échoué de notre côté"
        case .internalErrorMessage:
            "Une erreur est survenue sur ce site ; vous n’êtes donc pas connecté. Recommencez la connexion ; si cela se reproduit, contactez l’assistance avec les détails ci-dessous."
        case .signInNotRecordedMessage:
            "Le service de connexion n’a pas pu enregistrer cette étape ; vous n’êtes donc pas connecté. Recommencez la connexion dans un instant."
        case .cancelledTitle: "Connexion annulée"
        case .cancelledMessage: "Vous avez annulé la connexion avec Apple."
        case .notVerifiedTitle: "La connexion n’a pas pu être vérifiée"
        case .notVerifiedMessage:
            "La confirmation de votre identité par Apple n’est pas valide ; vous n’êtes donc pas connecté. Recommencez la connexion."
        case .stateMissingTitle: "Cette connexion ne correspond pas à votre navigateur"
        case .stateMissingMessage:
            "Votre navigateur n’a pas renvoyé le cookie de cette connexion. Autorisez les cookies pour ce site, puis recommencez la connexion."
        case .stateExpiredTitle: "Cette connexion a expiré"
        case .stateExpiredMessage:
            "Une connexion ne sert qu’une fois et pendant 10 minutes ; celle-ci a expiré ou a déjà été utilisée. Recommencez la connexion."
        case .incompleteTitle: "La connexion n’a pas abouti"
        case .incompleteMessage: "La réponse d’Apple était incomplète ; vous n’êtes donc pas connecté. Recommencez la connexion."
        }
    }
}
