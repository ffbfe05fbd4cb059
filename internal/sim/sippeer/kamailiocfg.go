package sippeer

// kamailioScript is kamailio's configuration; {{NAME}} fields are filled in by
// kamailioConfig. The registrar keeps contacts in memory; digest answers are checked
// against the password route PASSWORD gives (no database). Requests for this domain go to
// a registered contact, or else to the target; other requests are relayed as addressed.
// Every dialog is record-routed, so in-dialog requests come back through the proxy.
const kamailioScript = `#!KAMAILIO
debug=2
log_stderror=yes
children=2
tcp_children=2
auto_aliases=no
listen=udp:127.0.0.1:{{PORT}}
listen=tcp:127.0.0.1:{{PORT}}
alias="{{REALM}}"

loadmodule "tm.so"
loadmodule "sl.so"
loadmodule "rr.so"
loadmodule "pv.so"
loadmodule "maxfwd.so"
loadmodule "textops.so"
loadmodule "siputils.so"
loadmodule "xlog.so"
loadmodule "sanity.so"
loadmodule "usrloc.so"
loadmodule "registrar.so"
loadmodule "auth.so"

modparam("usrloc", "db_mode", 0)
modparam("rr", "append_fromtag", 1)
modparam("registrar", "max_expires", 3600)

request_route {
	if (!mf_process_maxfwd_header("10")) {
		sl_send_reply("483", "Too Many Hops");
		exit;
	}
	if (!sanity_check()) {
		exit;
	}
	xlog("L_INFO", "sippeer: $rm $ru from $si:$sp\n");
	if (is_method("OPTIONS") && uri == myself && $rU == $null) {
		sl_send_reply("200", "Keepalive");
		exit;
	}
	if (has_totag()) {
		route(IN_DIALOG);
		exit;
	}
	if (is_method("CANCEL")) {
		if (t_check_trans()) {
			route(RELAY);
		}
		exit;
	}
	if (is_method("ACK")) {
		route(ACK);
	}
	t_check_trans();
	if (is_method("REGISTER")) {
		route(REGISTRAR);
		exit;
	}
	if (is_method("INVITE") && {{AUTH_INVITES}} == 1) {
		route(AUTH_INVITE);
	}
	if (is_method("INVITE|SUBSCRIBE|REFER")) {
		record_route();
	}
	if (uri == myself || $rd == "{{REALM}}") {
		if (lookup("location")) {
			route(RELAY);
			exit;
		}
		if ("{{TARGET}}" == "") {
			sl_send_reply("404", "Not Found");
			exit;
		}
		$du = "{{TARGET}}";
	}
	route(RELAY);
}

route[IN_DIALOG] {
	if (loose_route()) {
		route(RELAY);
		exit;
	}
	if (is_method("ACK")) {
		route(ACK);
	}
	sl_send_reply("404", "Not Here");
	exit;
}

# REGISTER: a valid digest answer from a known user for their own address of record
route[REGISTRAR] {
	if (!route(PASSWORD) || !pv_www_authenticate("{{REALM}}", "$var(password)", "0")) {
		if ($rc == -2 || ($au != $null && $var(password) == "")) {
			xlog("L_NOTICE", "sippeer: REGISTER refused for $au from $si\n");
			sl_send_reply("403", "Forbidden");
			exit;
		}
		www_challenge("{{REALM}}", "0");
		exit;
	}
	if ($au != $tU) {
		sl_send_reply("403", "Forbidden: not your address");
		exit;
	}
	consume_credentials();
	if (!save("location")) {
		sl_reply_error();
	}
	exit;
}

# INVITE from a caller, when the proxy asks for credentials (407)
route[AUTH_INVITE] {
	if (!route(PASSWORD) || !pv_proxy_authenticate("{{REALM}}", "$var(password)", "0")) {
		if ($rc == -2 || ($au != $null && $var(password) == "")) {
			sl_send_reply("403", "Forbidden");
			exit;
		}
		proxy_challenge("{{REALM}}", "0");
		exit;
	}
	consume_credentials();
}

# PASSWORD sets $var(password) to the password of the user the credentials name
route[PASSWORD] {
	$var(password) = "";
	if ($au == $null) {
		return -1;
	}
{{PASSWORDS}}	return -1;
}

# an ACK with no route of its own: relayed when it belongs to a transaction (a failed
# INVITE's), dropped otherwise
route[ACK] {
	if (t_check_trans()) {
		t_relay();
	}
	exit;
}

route[RELAY] {
	if (!t_relay()) {
		sl_reply_error();
	}
	exit;
}
`
