// The .emmy language: ops in index notation, monoids, schedules.
// docs/language.md describes every construct; src/syntax/build_ast.cpp turns the
// parse tree into the AST (the parse tree never leaves src/syntax/).
grammar Emmy;

module      : item* EOF ;
item        : importDecl | opDecl | derivedOp | monoidDecl | scheduleDecl ;

importDecl  : 'import' ID ('.' ID)* ';' ;

// ---- ops ---------------------------------------------------------------------
opDecl      : 'op' ID '(' paramList? ')' '->' '(' paramList? ')' '{' stmt* '}' ;
paramList   : param (',' param)* ','? ;
// `op sdpa_bwd = grad(sdpa, q, k, v) saving m, l;`: an op derived from another (sema derives its
// body). `grad` and `saving` are words of this place only (build_ast refuses others): they stay
// names elsewhere.
derivedOp   : 'op' ID '=' ID '(' ID (',' ID)* ')' savingList? ';' ;
savingList  : ID ID (',' ID)* ;
param       : ID ':' ID ('[' dim (',' dim)* ']')? ;
// An output's dim may be computed from the inputs' sizes (`T - K + 1`); sema checks where.
dim         : ID | INT | expr ;

stmt        : letStmt | assignStmt ;
letStmt     : 'let' ID '=' expr ';' ;
assignStmt  : ID '[' exprList? ']' '=' expr ';'
            | ID '=' expr ';'
            ;

// ---- expressions (lowest precedence first) -----------------------------------
expr        : orExpr ;
orExpr      : andExpr ('||' andExpr)* ;
andExpr     : cmpExpr ('&&' cmpExpr)* ;
cmpExpr     : addExpr (cmpOp addExpr)? ;
cmpOp       : '==' | '!=' | '<' | '<=' | '>' | '>=' ;
addExpr     : mulExpr (addOp mulExpr)* ;
addOp       : '+' | '-' ;
mulExpr     : unaryExpr (mulOp unaryExpr)* ;
mulOp       : '*' | '/' | '%' ;
unaryExpr   : ('-' | '!') unaryExpr
            | postfixExpr
            ;
postfixExpr : primary postfix* ;
postfix     : '[' indexList? ']'       # indexPostfix
            | '.' ID                   # fieldPostfix
            ;
primary     : INT                                                   # intLit
            | FLOAT                                                 # floatLit
            | ('true' | 'false')                                    # boolLit
            | 'inf'                                                 # infLit
            | ID '(' ID (',' ID)* ('where' expr)? ':' exprList ')'  # reduceCall
            | ID '(' exprList? ')'                                  # call
            | ID                                                    # name
            | '(' expr ')'                                          # paren
            | '(' expr ',' exprList? ')'                            # tuple
            ;
exprList    : expr (',' expr)* ','? ;
indexList   : index (',' index)* ','? ;
index       : ':' | expr ;

// ---- monoids -----------------------------------------------------------------
monoidDecl  : 'monoid' ID '(' fieldList ')' '{' monoidMember* '}' ;
fieldList   : field (',' field)* ','? ;
field       : ID ':' ID ('[' dim ']')? ;
monoidMember: 'identity' '=' expr ';'                                         # identityMember
            | 'lift' '(' fieldList ')' '=' expr ';'                           # liftMember
            | 'combine' '(' ID ',' ID ')' '{' letStmt* 'yield' expr ';' '}'   # combineMember
            | 'assume' ID ';'                                                 # assumeMember
            ;

// ---- schedules ---------------------------------------------------------------
// `where`: a guard over the op's sizes; the first block whose guard holds is the default.
// `auto;` in place of the knobs: the auto-scheduler's choice at each run's sizes.
scheduleDecl: 'schedule' ID 'for' ID ('as' STRING)? ('where' expr)? ('{' knobEntry* '}' | autoBody) ;
// `auto` is a word of this place only (build_ast refuses another): it stays a name elsewhere.
autoBody    : ID ';' ;
knobEntry   : ID ('@' ID)? '=' knobValue ';' ;
// A knob value is taken verbatim from the source text (KNOBS.md codec); the
// schedule codec parses it, so a line pastes unchanged into EMMY_KNOBS.
knobValue   : (~(';' | '{' | '}'))* ;

// ---- tokens --------------------------------------------------------------------
ID          : [a-zA-Z_] [a-zA-Z_0-9]* ;
FLOAT       : [0-9]+ '.' [0-9]* EXP? | '.' [0-9]+ EXP? | [0-9]+ EXP ;
fragment EXP: [eE] [+-]? [0-9]+ ;
INT         : [0-9]+ ;
STRING      : '"' (~["\\\r\n] | '\\' .)* '"' ;
// Doc comments ride on their own channel; build_ast attaches them to the item below.
DOC         : '///' ~[\r\n]* -> channel(2) ;
LINE_COMMENT: '//' ~[\r\n]* -> channel(HIDDEN) ;
BLOCK_COMMENT: '/*' .*? '*/' -> channel(HIDDEN) ;
WS          : [ \t\r\n]+ -> channel(HIDDEN) ;
// Lexical errors go to channel 3: the parser carries on, build_ast reports them.
// (Its body can never contain '*/', so it cannot outmatch a closed comment.)
UNTERMINATED_COMMENT : '/*' ( ~[*] | '*'+ ~[*/] )* '*'* EOF -> channel(3) ;
ERRCHAR     : . -> channel(3) ;
