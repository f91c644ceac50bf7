extension PageText {
    var spanish: String {
        switch self {
        case .statusLabel: "Estado"
        case .reasonLabel: "Motivo"
        case .requestIDLabel: "ID de solicitud"
        case .signInWithApple: "Iniciar sesión con Apple"
        case .signInAgain: "Volver a iniciar sesión"
        case .useAnotherAppleID: "Usar otro Apple ID"
        case .startNewSignIn: "Iniciar sesión de nuevo"
        case .signOut: "Cerrar sesión"

        case .signInTitle: "Iniciar sesión"
        case .signInMessage: "Inicia sesión con tu Apple ID para continuar en este sitio."
        case .unauthorizedTitle: "Es necesario iniciar sesión"
        case .unauthorizedMessage:
            "Esta página es solo para personas que han iniciado sesión. Inicia sesión con tu Apple ID y vuelve a intentarlo."
        case .signedOutTitle: "Has cerrado sesión"
        case .signedOutMessage:
            "Has cerrado sesión en este sitio en este navegador. Cierra esta ventana o vuelve a iniciar sesión para continuar."
        case .accountDeletedTitle: "Cuenta eliminada"
        case .accountDeletedMessage:
            "Tu cuenta se ha eliminado y has cerrado sesión en todos tus dispositivos; este sitio ya no tiene acceso a tu Apple ID."
        case .storeUnavailableTitle: "Vuelve a intentarlo"
        case .storeUnavailableMessage:
            "El servicio de inicio de sesión no pudo registrar este paso, así que no se ha cambiado nada. Vuelve a intentarlo en un momento."
        case .ruleRefusedTitle: "No disponible para tu cuenta"
        case .ruleRefusedMessage:
            "Has iniciado sesión, pero esta página no está abierta a tu Apple ID. Pide acceso al responsable del sitio o inicia sesión con otro Apple ID."
        case .confirmSignOutTitle: "¿Cerrar sesión?"
        case .confirmSignOutMessage:
            "El enlace para cerrar sesión venía de otro sitio, así que no se ha seguido. Usa el botón para cerrar sesión."

        case .notFoundTitle: "Página no encontrada"
        case .notFoundMessage:
            "No hay ninguna página en esta dirección. Comprueba el enlace o vuelve a la página de inicio del sitio."
        case .methodNotAllowedTitle: "No permitido aquí"
        case .methodNotAllowedMessage:
            "Esta dirección no acepta ese tipo de solicitud. Vuelve atrás y usa los enlaces y botones del propio sitio."
        case .upstreamUnavailableTitle: "El sitio no responde"
        case .upstreamUnavailableMessage:
            "No se pudo contactar con la aplicación que hay detrás de esta página. Vuelve a intentarlo en un momento."
        case .upstreamTimeoutTitle: "El sitio tarda demasiado"
        case .upstreamTimeoutMessage:
            "La aplicación que hay detrás de esta página no respondió a tiempo. Vuelve a intentarlo en un momento."
        case .otherErrorTitle: "Algo ha ido mal"
        case .otherErrorMessage: "No se pudo completar esta solicitud. Vuelve a intentarlo en un momento."

        case .accountNotDeletedTitle: "La cuenta no se ha eliminado"
        case .revocationFailedMessage:
            "Apple no confirmó la revocación, así que no se ha cambiado nada. Vuelve a intentarlo en un momento."
        case .deletionCrossSiteMessage:
            "La solicitud venía de otro sitio, así que no se ha cambiado nada. Elimina tu cuenta desde la propia página de este sitio."
        case .deletionNeedsSignInMessage:
            "No has iniciado sesión, así que no hay ninguna cuenta que eliminar. Inicia sesión primero y después elimina tu cuenta."

        case .policyDeniedTitle: "No puedes iniciar sesión aquí"
        case .policyDeniedMessage:
            "Tu Apple ID no está en la lista de cuentas permitidas de este sitio. Inicia sesión con otro Apple ID o pide acceso al responsable del sitio."
        case .appleTimeoutTitle: "Apple no respondió a tiempo"
        case .appleUnavailableTitle: "Iniciar sesión con Apple no está disponible ahora"
        case .appleFailedMessage:
            "Apple no respondió como se esperaba, así que no has iniciado sesión. Vuelve a intentarlo en un momento."
        case .internalErrorTitle: "El inicio de sesión falló por nuestra parte"
        case .internalErrorMessage:
            "Algo ha ido mal en este sitio, así que no has iniciado sesión. Vuelve a iniciar sesión; si vuelve a ocurrir, contacta con soporte con los detalles de abajo."
        case .signInNotRecordedMessage:
            "El servicio de inicio de sesión no pudo registrar este paso, así que no has iniciado sesión. Vuelve a iniciar sesión en un momento."
        case .cancelledTitle: "Inicio de sesión cancelado"
        case .cancelledMessage: "Has cancelado el inicio de sesión con Apple."
        case .notVerifiedTitle: "No se pudo verificar el inicio de sesión"
        case .notVerifiedMessage:
            "La confirmación de tu identidad por parte de Apple no es válida, así que no has iniciado sesión. Vuelve a iniciar sesión."
        case .stateMissingTitle: "Este inicio de sesión no coincide con tu navegador"
        case .stateMissingMessage:
            "Tu navegador no devolvió la cookie de este inicio de sesión. Permite las cookies para este sitio y vuelve a iniciar sesión."
        case .stateExpiredTitle: "Este inicio de sesión ha caducado"
        case .stateExpiredMessage:
            "Un inicio de sesión sirve una sola vez y durante 10 minutos; este ha caducado o ya se usó. Vuelve a iniciar sesión."
        case .incompleteTitle: "El inicio de sesión no se completó"
        case .incompleteMessage: "La respuesta de Apple estaba incompleta, así que no has iniciado sesión. Vuelve a iniciar sesión."
        }
    }
}
