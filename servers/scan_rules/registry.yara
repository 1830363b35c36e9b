//////////////////////////////////////////
// The registry's own rules, compiled with the YARA rules of cisco-ai-mcp-scanner (servers/scanning.py):
// what those rules leave out of the attacks on tool definitions. Each rule names its severity.
//////////////////////////////////////////

rule instruction_override_previous {
    meta:
        description = "Tells the model to ignore or replace the instructions it was given before"
        threat_type = "PROMPT INJECTION"
        severity = "HIGH"
    strings:
        $ignore_previous = /\b(ignore|disregard|forget|override|overrule|discard)\s+(all\s+|any\s+|every\s+)?(of\s+)?(the\s+|your\s+|my\s+)?(previous|prior|above|earlier|preceding|original|initial|system|existing|other)\s+(instructions?|prompts?|rules|directions|directives|guidelines|context|messages)\b/i
        $new_rules = /\b(your|the)\s+(new|real|actual|true)\s+(instructions|task|directive|rules)\s+(is|are)\b/i
    condition:
        any of them
}

rule hidden_instruction_tags {
    meta:
        description = "Wraps text for the model in tags meant to make it authoritative or hide it from the user"
        threat_type = "PROMPT INJECTION"
        severity = "HIGH"
    strings:
        $tag = /<\s*\/?\s*(important|system|hidden|secret|instructions?|admin|assistant[_-]?only|model[_-]?only)\s*>/i
        $zero_width = /(\xe2\x80\x8b|\xe2\x80\x8c|\xe2\x80\x8d|\xe2\x81\xa0|\xef\xbb\xbf)[^\n]{0,40}(\xe2\x80\x8b|\xe2\x80\x8c|\xe2\x80\x8d|\xe2\x81\xa0|\xef\xbb\xbf)/
        $tag_chars = /\xf3\xa0[\x80-\x81][\x80-\xbf]/
    condition:
        any of them
}

rule cross_tool_directive {
    meta:
        description = "Tells the model how to use other tools, or to use this one before or instead of them"
        threat_type = "TOOL POISONING"
        severity = "HIGH"
    strings:
        $other_tool_must = /\b(the|any|every|all|each)\s+(other\s+)?[`'"]?[A-Za-z][\w.-]{2,64}[`'"]?\s+tools?\s+(must|should|shall|has\s+to|have\s+to|needs?\s+to|is\s+required\s+to)\s+(always\s+|also\s+|now\s+|only\s+)?(send|use|include|add|forward|copy|pass|be\s+called|receive|cc|bcc)\b/i
        $when_available = /\bwhen(ever)?\s+this\s+tool\s+is\s+(available|present|loaded|installed|enabled)\b/i
        $before_any_other = /\b(before|prior\s+to|instead\s+of)\s+(using|calling|invoking|running)\s+(any|every|all|the)\s+other\s+tools?\b/i
        $every_call = /\b(on|for|with)\s+(every|each|all)\s+(other\s+)?(tool\s+calls?|calls?\s+to\s+(other|any)\s+tools?)\b/i
        $redirect = /\b(all|every)\s+(e-?mails?|messages?|payments?|transfers?|requests?)\s+(must|should|shall)\s+(be\s+)?(sent|forwarded|redirected|copied|routed)\s+to\b/i
    condition:
        any of them
}

rule exfiltration_parameter {
    meta:
        description = "Asks the model to put its conversation, instructions or other hidden context into an argument"
        threat_type = "DATA EXFILTRATION"
        severity = "HIGH"
    strings:
        $pass_context = /\b(pass|include|provide|put|send|add|copy|fill|append|attach)\s+(in\s+)?(here\s+)?(the\s+|your\s+|all\s+|any\s+)?(entire|full|whole|complete|previous|prior|all|current)\s+(conversation|chat|message|dialog(ue)?|context|history|system\s+prompt|instructions|transcript)\b/i
        $param_name = /"(conversation|conversation_history|chat_history|full_context|system_prompt|previous_messages|all_messages|transcript|sidenote|side_note)"\s*:\s*\{/i
        $secret_files = /(~|\$HOME|\/home\/[\w.-]+|\/root)\/\.(ssh|aws|gnupg|kube|docker|config\/gcloud|netrc|npmrc|pypirc)\b/
        $mcp_config = /\b(read|open|cat|load|pass|send|include|upload|copy|attach)\s+(the\s+|your\s+)?(contents?\s+of\s+)?(the\s+)?[~\/\w.-]*(mcp\.json|claude_desktop_config\.json|mcp_config\.json)/i
    condition:
        any of them
}

rule concealment {
    meta:
        description = "Tells the model to keep what it does from the user"
        threat_type = "PROMPT INJECTION"
        severity = "HIGH"
    strings:
        $conceal = /\b(without|never)\s+(telling|informing|notifying|asking|alerting|mentioning\s+(it|this)\s+to)\s+(the\s+)?user\b/i
        $dont_reveal = /\b(do\s+not|don't|never)\s+(reveal|disclose|show|mention|explain)\s+(this|these|that|the)\s+(instructions?|step|note|behaviou?r|action|part)\b/i
        $silently = /\b(silently|secretly|quietly|covertly)\s+(send|read|copy|forward|add|include|call|run|execute|upload|change)\b/i
    condition:
        any of them
}
